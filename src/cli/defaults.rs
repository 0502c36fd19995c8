//! Where the panel, the price table and the cache come from when no flag
//! names them, in a documented order: the flag, then the current
//! directory, then the directory that holds `--tasks`, then the defaults
//! built into the binary. The run says which it used.

use std::path::{Path, PathBuf};

use redjury::judge::config::PanelConfig;
use redjury::report::Prices;

const BUILTIN_PANEL: &str = include_str!("../../panel.toml");
const BUILTIN_PRICES: &str = include_str!("../../prices.toml");

pub struct Found {
    pub panel: PanelConfig,
    pub panel_from: String,
    pub prices: Prices,
    pub prices_from: String,
    pub cache: PathBuf,
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

pub fn resolve(
    panel: Option<&Path>,
    prices: Option<&Path>,
    cache: Option<&Path>,
    out: &Path,
    tasks: Option<&Path>,
) -> anyhow::Result<Found> {
    let (panel, panel_from) = match locate(panel, "panel.toml", tasks) {
        Some((path, why)) => (PanelConfig::load(&path)?, describe(&path, why)),
        None => (
            PanelConfig::parse(BUILTIN_PANEL, "built-in panel.toml")?,
            "built-in default panel".to_string(),
        ),
    };
    let (prices, prices_from) = match locate(prices, "prices.toml", tasks) {
        Some((path, why)) => (Prices::load(&path)?, describe(&path, why)),
        None => (
            Prices::parse(BUILTIN_PRICES, "built-in prices.toml")?,
            "built-in price table".to_string(),
        ),
    };
    let cache = match cache {
        Some(c) => c.to_path_buf(),
        None => match out.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => parent.join("cache.sqlite"),
            None => PathBuf::from("cache.sqlite"),
        },
    };
    Ok(Found { panel, panel_from, prices, prices_from, cache })
}

fn describe(path: &Path, why: &str) -> String {
    if why == "--flag" { path.display().to_string() } else { format!("{} ({why})", path.display()) }
}
