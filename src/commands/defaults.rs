//! Where the panel, the price table and the cache come from when no flag
//! names them, in a documented order: the flag, then the current
//! directory, then the directory that holds `--tasks`, then the defaults
//! built into the binary. The run says which it used.

use std::path::{Path, PathBuf};

use crate::aggregate::Prices;
use crate::commands::CommandError;
use crate::judge::config::{JudgeOrder, PanelConfig, VoteMode};

const BUILTIN_PANEL: &str = include_str!("../../panel.toml");
const BUILTIN_PRICES: &str = include_str!("../../prices.toml");

/// What a command judges with, and where each came from.
#[derive(Debug, Clone)]
pub struct Found {
    /// The panel.
    pub panel: PanelConfig,
    /// Where the panel came from, for the user.
    pub panel_from: String,
    /// The panel file's text (calibrate writes a cascade's panel from it).
    pub panel_text: String,
    /// The price table.
    pub prices: Prices,
    /// Where the prices came from.
    pub prices_from: String,
    /// The cache file.
    pub cache: PathBuf,
}

impl Found {
    /// What every command that judges says first: which panel, prices and
    /// cache it uses.
    pub fn describe(&self) -> String {
        format!(
            "panel: {}\nprices: {}\ncache: {}\n",
            self.panel_from,
            self.prices_from,
            crate::cache::shown_location(&self.cache)
        )
    }
}

/// The first of: the flag, `./name`, `name` beside the tasks folder.
fn locate(
    flag: Option<&Path>,
    name: &str,
    tasks: Option<&Path>,
) -> Option<(PathBuf, &'static str)> {
    if let Some(p) = flag {
        return Some((p.to_path_buf(), "--flag"));
    }
    let here = PathBuf::from(name);
    if here.is_file() {
        return Some((here, "current directory"));
    }
    let beside = tasks?.canonicalize().ok()?.parent()?.join(name);
    beside.is_file().then_some((beside, "beside the tasks folder"))
}

/// The panel, prices and cache a command uses. A panel or price table
/// that does not load refuses the command.
pub(crate) fn resolve(
    panel: Option<&Path>,
    prices: Option<&Path>,
    cache: Option<&Path>,
    out: &Path,
    tasks: Option<&Path>,
) -> Result<Found, CommandError> {
    let (panel, panel_from, panel_text) = match locate(panel, "panel.toml", tasks) {
        Some((path, why)) => {
            let panel = PanelConfig::load(&path).map_err(CommandError::refused)?;
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            (panel, describe(&path, why), text)
        }
        None => (
            PanelConfig::parse(BUILTIN_PANEL, "built-in panel.toml")
                .map_err(CommandError::failed)?,
            "built-in default panel".to_string(),
            BUILTIN_PANEL.to_string(),
        ),
    };
    let (prices, prices_from) = match locate(prices, "prices.toml", tasks) {
        Some((path, why)) => {
            (Prices::load(&path).map_err(CommandError::refused)?, describe(&path, why))
        }
        None => (
            Prices::parse(BUILTIN_PRICES, "built-in prices.toml").map_err(CommandError::failed)?,
            "built-in price table".to_string(),
        ),
    };
    let mut panel = panel;
    if matches!(panel.mode, VoteMode::Decided | VoteMode::Escalate) {
        order_for_deciding(&mut panel, &prices);
    }
    let cache = match cache {
        Some(c) => c.to_path_buf(),
        None => match out.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => parent.join("cache.sqlite"),
            None => PathBuf::from("cache.sqlite"),
        },
    };
    Ok(Found { panel, panel_from, panel_text, prices, prices_from, cache })
}

/// The order decided mode asks in: as `[vote] order` says; unwritten, the
/// cheapest first when the price table prices every judge, since what the
/// mode saves is money (on a panel with planted 85% agreement, 30% of the
/// cost cheapest first against 7% in panel order: docs/judges.md), and
/// the panel's order when a judge has no price to rank it by.
fn order_for_deciding(panel: &mut PanelConfig, prices: &Prices) {
    let every_judge_priced = panel.judges.iter().all(|j| prices.models.contains_key(&j.model));
    match panel.order {
        Some(JudgeOrder::Cheapest) => cheapest_first(panel, prices),
        None if every_judge_priced => cheapest_first(panel, prices),
        Some(JudgeOrder::Panel) | None => {}
    }
}

/// Orders the judges for `[vote] order = "cheapest"`: by what a typical
/// call (5,000 prompt tokens, 300 output tokens) costs at the price table's
/// rates, a judge without a price last; ties keep the panel's order.
fn cheapest_first(panel: &mut PanelConfig, prices: &Prices) {
    let typical = |model: &str| {
        let billed = crate::aggregate::Billed { input: 5_000, output: 300, ..Default::default() };
        prices.cost(model, billed).unwrap_or(f64::INFINITY)
    };
    panel.judges.sort_by(|a, b| typical(&a.model).total_cmp(&typical(&b.model)));
}

fn describe(path: &Path, why: &str) -> String {
    if why == "--flag" { path.display().to_string() } else { format!("{} ({why})", path.display()) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn judges_in_order(vote: &str, prices: &str) -> Vec<String> {
        let judge = |name: &str| {
            format!(
                "[[judge]]\nname = \"{name}\"\nprovider = \"openai\"\nmodel = \"{name}\"\nbase_url = \"http://127.0.0.1:9/v1\"\nrpm = 10\ntpm = 1000\nmax_concurrency = 1\ntimeout_secs = 10\nmax_attempts = 1\n\n"
            )
        };
        let text = format!(
            "[vote]\nquorum = 2\n{vote}\n\n{}{}{}",
            judge("dear"),
            judge("mid"),
            judge("cheap")
        );
        let mut panel = PanelConfig::parse(&text, "panel").unwrap();
        let prices = Prices::parse(prices, "prices").unwrap();
        if panel.mode == VoteMode::Decided {
            order_for_deciding(&mut panel, &prices);
        }
        panel.judges.into_iter().map(|j| j.name).collect()
    }

    /// Issue 36: decided mode saves money, not calls, so where the price
    /// table ranks every judge it asks the cheapest first unless the panel
    /// says otherwise; a judge without a price keeps the panel's order.
    #[test]
    fn decided_mode_asks_the_cheapest_first_where_prices_rank_every_judge() {
        let all = "[models.dear]\ninput = 3.0\ncached_input = 0.3\noutput = 9.0\n[models.mid]\ninput = 2.0\ncached_input = 0.2\noutput = 6.0\n[models.cheap]\ninput = 1.0\ncached_input = 0.1\noutput = 3.0\n";
        let two = "[models.dear]\ninput = 3.0\ncached_input = 0.3\noutput = 9.0\n[models.cheap]\ninput = 1.0\ncached_input = 0.1\noutput = 3.0\n";
        let decided = "mode = \"decided\"";
        assert_eq!(judges_in_order(decided, all), ["cheap", "mid", "dear"]);
        assert_eq!(judges_in_order(decided, two), ["dear", "mid", "cheap"], "mid has no price");
        let panel = "mode = \"decided\"\norder = \"panel\"";
        assert_eq!(judges_in_order(panel, all), ["dear", "mid", "cheap"]);
        let cheapest = "mode = \"decided\"\norder = \"cheapest\"";
        assert_eq!(judges_in_order(cheapest, two), ["cheap", "dear", "mid"], "unpriced last");
        assert_eq!(judges_in_order("", all), ["dear", "mid", "cheap"], "mode all: as written");
    }

    /// Every model of the default panel has a price, each price says where
    /// it came from and when, and the batch rates are half the live ones
    /// (as all three providers sell them).
    #[test]
    fn the_built_in_prices_cover_the_default_panel_with_their_sources() {
        let prices = Prices::parse(BUILTIN_PRICES, "built-in prices.toml").unwrap();
        let panel = include_str!("../../panel.toml");
        let models: Vec<&str> = panel
            .lines()
            .filter_map(|l| l.trim().strip_prefix("model = \""))
            .filter_map(|l| l.strip_suffix('"'))
            .collect();
        assert_eq!(models.len(), 3, "{panel}");
        for model in models {
            let p = prices.models.get(model).unwrap_or_else(|| panic!("no price for {model}"));
            assert!(p.source.as_deref().is_some_and(|s| s.len() > 20), "{model}: no source");
            let checked = p.checked.as_deref().unwrap_or("");
            assert!(
                checked.len() == 10 && checked.as_bytes()[4] == b'-',
                "{model}: checked {checked:?}"
            );
            assert!(p.input > 0.0 && p.output > p.input, "{model}");
            assert!(p.cached_input < p.input, "{model}");
            assert_eq!(p.batch_input, Some(p.input / 2.0), "{model}");
            assert_eq!(p.batch_output, Some(p.output / 2.0), "{model}");
        }
    }
}
