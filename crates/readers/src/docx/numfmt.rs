//! List-number rendering for every value of OOXML `ST_NumberFormat`
//! (ECMA-376 Part 1, §17.18.59), the way Microsoft Word displays it.
//!
//! Standalone and dependency-free: `format_number("upperRoman", 4) == "IV"`.
//! `custom` is resolved by the caller (`w:numFmt/@w:format`); here it renders
//! as decimal. `bullet` and `none` render as "" (for `bullet` the caller
//! shows the literal `w:lvlText`).
//!
//! Source abbreviations used in the per-format comments:
//! * ECMA  — ECMA-376 / ISO 29500-1 §17.18.59 (character sets and examples;
//!   the 5th-edition character lists as quoted in public implementations).
//! * OI    — [MS-OI29500] §2.1.540 "Part 1 Section 17.18.59, ST_NumberFormat":
//!   Word's documented deviations (a) ideographEnclosedCircle is
//!   parenthesised, (b) hindiVowels/hindiConsonants are swapped, (c) aiueo /
//!   aiueoFullWidth restart at 1 after 46, (d) bahtText is decimal,
//!   (e) chineseCountingThousand does not write U+96F6.
//! * DOCX  — [MS-DOCX] §2.4 "numFmt Extensions": Word's own names for the
//!   formats, built from its first values (e.g. chineseCounting
//!   "U+4E00, U+5341, U+4E00U+25CBU+25CB" = 一, 十, 一○○ for 1, 10, 100).
//! * LO    — LibreOffice: i18npool defaultnumberingprovider.cxx and
//!   nativenumbersupplier.cxx, and sw/source/writerfilter/dmapper/
//!   ConversionHelper.cxx (ConvertNumberingType) for the DOCX import mapping.
//! * OO    — ONLYOFFICE sdkjs word/Editor/Numbering/NumberingLvl.js
//!   (`CNumberingLvl.GetSymbols`): the exact glyph set it renders per format,
//!   and whether it adds decimal digits for out-of-range values. ONLYOFFICE
//!   targets Word compatibility, so it is used where Word is undocumented.
//!
//! Out-of-range values: every format that has no glyph for a value renders
//! that value as plain decimal (`n.to_string()`), never panics, and never
//! produces unbounded output (repeat-style formats fall back to decimal when
//! more than `MAX_REPEAT` copies would be needed).

/// Most copies of one glyph a repeat-style label may contain (letters
/// "aaa…", chicago "***…", roman "MMM…"). Beyond it the value renders as
/// decimal. A resource limit, not Word behaviour: no real list gets there.
const MAX_REPEAT: u64 = 256;

/// One `ST_NumberFormat` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumFmt {
    Decimal,
    UpperRoman,
    LowerRoman,
    UpperLetter,
    LowerLetter,
    Ordinal,
    CardinalText,
    OrdinalText,
    Hex,
    Chicago,
    IdeographDigital,
    JapaneseCounting,
    Aiueo,
    Iroha,
    DecimalFullWidth,
    DecimalHalfWidth,
    JapaneseLegal,
    JapaneseDigitalTenThousand,
    DecimalEnclosedCircle,
    DecimalFullWidth2,
    AiueoFullWidth,
    IrohaFullWidth,
    DecimalZero,
    Bullet,
    Ganada,
    Chosung,
    DecimalEnclosedFullstop,
    DecimalEnclosedParen,
    DecimalEnclosedCircleChinese,
    IdeographEnclosedCircle,
    IdeographTraditional,
    IdeographZodiac,
    IdeographZodiacTraditional,
    TaiwaneseCounting,
    IdeographLegalTraditional,
    TaiwaneseCountingThousand,
    TaiwaneseDigital,
    ChineseCounting,
    ChineseLegalSimplified,
    ChineseCountingThousand,
    KoreanDigital,
    KoreanCounting,
    KoreanLegal,
    KoreanDigital2,
    VietnameseCounting,
    RussianLower,
    RussianUpper,
    None,
    NumberInDash,
    Hebrew1,
    Hebrew2,
    ArabicAlpha,
    ArabicAbjad,
    HindiVowels,
    HindiConsonants,
    HindiNumbers,
    HindiCounting,
    ThaiLetters,
    ThaiNumbers,
    ThaiCounting,
    BahtText,
    DollarText,
    Custom,
}

impl NumFmt {
    /// Parses a `w:numFmt/@w:val` value (case-sensitive, as in the schema).
    /// Unknown values are treated as `decimal`, which is also the default
    /// when `w:numFmt` is absent (§17.9.17).
    pub(crate) fn parse(val: &str) -> NumFmt {
        use NumFmt::*;
        match val {
            "decimal" => Decimal,
            "upperRoman" => UpperRoman,
            "lowerRoman" => LowerRoman,
            "upperLetter" => UpperLetter,
            "lowerLetter" => LowerLetter,
            "ordinal" => Ordinal,
            "cardinalText" => CardinalText,
            "ordinalText" => OrdinalText,
            "hex" => Hex,
            "chicago" => Chicago,
            "ideographDigital" => IdeographDigital,
            "japaneseCounting" => JapaneseCounting,
            "aiueo" => Aiueo,
            "iroha" => Iroha,
            "decimalFullWidth" => DecimalFullWidth,
            "decimalHalfWidth" => DecimalHalfWidth,
            "japaneseLegal" => JapaneseLegal,
            "japaneseDigitalTenThousand" => JapaneseDigitalTenThousand,
            "decimalEnclosedCircle" => DecimalEnclosedCircle,
            "decimalFullWidth2" => DecimalFullWidth2,
            "aiueoFullWidth" => AiueoFullWidth,
            "irohaFullWidth" => IrohaFullWidth,
            "decimalZero" => DecimalZero,
            "bullet" => Bullet,
            "ganada" => Ganada,
            "chosung" => Chosung,
            "decimalEnclosedFullstop" => DecimalEnclosedFullstop,
            "decimalEnclosedParen" => DecimalEnclosedParen,
            "decimalEnclosedCircleChinese" => DecimalEnclosedCircleChinese,
            "ideographEnclosedCircle" => IdeographEnclosedCircle,
            "ideographTraditional" => IdeographTraditional,
            "ideographZodiac" => IdeographZodiac,
            "ideographZodiacTraditional" => IdeographZodiacTraditional,
            "taiwaneseCounting" => TaiwaneseCounting,
            "ideographLegalTraditional" => IdeographLegalTraditional,
            "taiwaneseCountingThousand" => TaiwaneseCountingThousand,
            "taiwaneseDigital" => TaiwaneseDigital,
            "chineseCounting" => ChineseCounting,
            "chineseLegalSimplified" => ChineseLegalSimplified,
            "chineseCountingThousand" => ChineseCountingThousand,
            "koreanDigital" => KoreanDigital,
            "koreanCounting" => KoreanCounting,
            "koreanLegal" => KoreanLegal,
            "koreanDigital2" => KoreanDigital2,
            "vietnameseCounting" => VietnameseCounting,
            "russianLower" => RussianLower,
            "russianUpper" => RussianUpper,
            "none" => None,
            "numberInDash" => NumberInDash,
            "hebrew1" => Hebrew1,
            "hebrew2" => Hebrew2,
            "arabicAlpha" => ArabicAlpha,
            "arabicAbjad" => ArabicAbjad,
            "hindiVowels" => HindiVowels,
            "hindiConsonants" => HindiConsonants,
            "hindiNumbers" => HindiNumbers,
            "hindiCounting" => HindiCounting,
            "thaiLetters" => ThaiLetters,
            "thaiNumbers" => ThaiNumbers,
            "thaiCounting" => ThaiCounting,
            "bahtText" => BahtText,
            "dollarText" => DollarText,
            "custom" => Custom,
            _ => Decimal,
        }
    }

    /// The label Word shows for counter value `n` in this format.
    pub(crate) fn render(self, n: i64) -> String {
        use NumFmt::*;
        match self {
            // ECMA: decimal "1, 2, 3". Custom is the caller's business (brief);
            // bahtText is decimal in Word (OI d). dollarText: ECMA calls it the
            // "dollar text" of the run language, but LibreOffice renders it
            // with plain decimal digits in lists; followed, unverified
            // against Word (no Word-made file in the corpus uses it).
            Decimal | Custom | BahtText | DollarText => decimal(n),

            // ECMA: "none" shows no number; "bullet" uses lvlText literally.
            None | Bullet => String::new(),

            // ECMA: I, II, III … ; LO toRoman and OO both write repeated M
            // above 3999 (4000 → MMMM). 0 and negatives: decimal.
            UpperRoman => roman(n).unwrap_or_else(|| decimal(n)),
            LowerRoman => roman(n).map(|s| s.to_ascii_lowercase()).unwrap_or_else(|| decimal(n)),

            // ECMA + §17.16.4.3.1 ALPHABETIC example (54 → "BBB"): the letter
            // is repeated once per 26 subtracted. LO imports these as
            // CHARS_UPPER/LOWER_LETTER_N ("AAA" style), agreeing.
            UpperLetter => repeat_alpha(n, &LATIN_UPPER),
            LowerLetter => repeat_alpha(n, &LATIN_LOWER),

            // English (the run language is not known here). Word's \* Ordinal:
            // 1st 2nd 3rd 4th … 11th 12th 13th … 21st.
            Ordinal => ordinal(n),
            // DOCX: "One, Two, Three, …" — first letter capitalised.
            CardinalText => cardinal_text(n),
            OrdinalText => ordinal_text(n),

            // ECMA: hexadecimal with upper-case digits ("…, E, F, 10, 11 …");
            // DOCX "1, A, B" (1, 10, 11).
            Hex => {
                if n > 0 {
                    format!("{n:X}")
                } else {
                    decimal(n)
                }
            }

            // ECMA "*, †, ‡, §" then doubled; LO lcl_formatChars1 on table_Chicago
            // ("*, †, ‡, §, **, ††, ..."). 5 → "**".
            Chicago => repeat_alpha(n, &CHICAGO),

            // DOCX "一, 一〇, 一〇〇": digit-by-digit with 〇 (U+3007).
            IdeographDigital => digits_sub(n, &CJK_DIGITS_3007),
            // OO uses the same glyph set as ideographDigital (〇 一…九, no
            // separators, no unit characters), i.e. the same digit-by-digit form.
            JapaneseDigitalTenThousand => digits_sub(n, &CJK_DIGITS_3007),

            // Japanese counting: 一…九 with 十百千 (no 一 before them: 十, 百, 千),
            // 万/億 groups. OO glyph set 〇一…九十百千; LO NUMBER_LOWER_ZH.
            JapaneseCounting => cjk_grouped(n, &JAPANESE_COUNTING),
            // ECMA/OO: 壱弐参四伍六七八九 拾百阡萬; legal style writes the 壱 (壱拾).
            JapaneseLegal => cjk_grouped(n, &JAPANESE_LEGAL),

            // ECMA: half-width katakana U+FF71–U+FF9C, U+FF66, U+FF9D (46);
            // OI c: Word does not repeat above 46, it starts at 1 again.
            Aiueo => cycle(n, &AIUEO_HALF),
            // ECMA/DOCX start ア イ ウ; OI c: 46 values, then restarts at 1.
            AiueoFullWidth => cycle(n, &AIUEO_FULL),
            // Iroha order. OO glyph set: half-width katakana plus full-width
            // ヰ/ヱ (no half-width forms) and ﾝ (48 values). Cycles like LO's
            // IROHA_*_JA (bRecycleSymbol) and Word's aiueo.
            Iroha => cycle(n, &iroha_half()),
            IrohaFullWidth => cycle(n, &IROHA_FULL),

            // DOCX "U+FF11, U+FF12, U+FF13": full-width digits (第１２条 style).
            DecimalFullWidth | DecimalFullWidth2 => digits_sub(n, &FULLWIDTH_DIGITS),
            // Half-width digits are ASCII digits.
            DecimalHalfWidth => decimal(n),

            // ECMA: ①…⑳ (U+2460–U+2473), "for values greater than the size of
            // the set … decimal" (…, ⑲, ⑳, 21). OO adds decimal digits too.
            DecimalEnclosedCircle => enclosed(n, 0x2460, 20),
            // DOCX ⒈ ⒉ ⒊ (U+2488…); OO: 20 glyphs then decimal.
            DecimalEnclosedFullstop => enclosed(n, 0x2488, 20),
            // DOCX ⑴ ⑵ ⑶ (U+2474…); OO: 20 glyphs then decimal.
            DecimalEnclosedParen => enclosed(n, 0x2474, 20),
            // OO: only ①…⑩ for the Chinese variant, then decimal (doubt).
            DecimalEnclosedCircleChinese => enclosed(n, 0x2460, 10),
            // DOCX ㈠ ㈡ ㈢ (U+3220…); OI a: Word puts them in parentheses,
            // i.e. the PARENTHESIZED IDEOGRAPH characters. OO has 10 glyphs and
            // no decimal digits, so the sequence restarts after ㈩ (doubt).
            IdeographEnclosedCircle => {
                if n > 0 {
                    cycle(n, &PAREN_IDEOGRAPHS)
                } else {
                    decimal(n)
                }
            }

            // ECMA/DOCX 甲, 乙, 丙 (the ten heavenly stems). OO: no decimal
            // digits in the glyph set → restarts after 癸. LO falls back to
            // decimal after 10 (doubt).
            IdeographTraditional => cycle(n, &STEMS),
            // ECMA/DOCX 子, 丑, 寅 (twelve earthly branches). OO adds decimal
            // digits, LO TableSize fallback: 13 → "13".
            IdeographZodiac => table_or_decimal(n, &BRANCHES),
            // ECMA 甲子, 乙丑, 丙寅 …: the sexagenary cycle (stem i mod 10 +
            // branch i mod 12, 60 values). OO: no decimal digits → restarts.
            IdeographZodiacTraditional => sexagenary(n),

            // DOCX chineseCounting "一, 十, 一○○": 1–99 with 十
            // (十, 十一, 二十, 二十一), 100 and above digit-by-digit with ○ U+25CB.
            ChineseCounting => chinese_counting(n),
            // ECMA: same construction as chineseCounting (十 rule). Zero glyph ○
            // as in taiwaneseDigital (OO) — doubt for values ≥ 100.
            TaiwaneseCounting => chinese_counting(n),
            // DOCX "一, 十, 一百": 千百十 units, 10 → 十, 100 → 一百. OO zero
            // glyph ○ (U+25CB); OI e: Word does not write 零 (U+96F6).
            ChineseCountingThousand => cjk_grouped(n, &CHINESE_COUNTING_THOUSAND),
            // ECMA: same as chineseCountingThousand (doubt on 10 → 十 vs 一十).
            TaiwaneseCountingThousand => cjk_grouped(n, &CHINESE_COUNTING_THOUSAND),
            // DOCX 壹, 贰, 叁; OO glyphs 零壹贰叁肆伍陆柒捌玖拾佰仟萬.
            ChineseLegalSimplified => cjk_grouped(n, &CHINESE_LEGAL_SIMPLIFIED),
            // DOCX 壹, 貳, 參; OO glyphs 壹貳參肆伍陸柒捌玖拾佰仟萬 (no 零).
            IdeographLegalTraditional => cjk_grouped(n, &IDEOGRAPH_LEGAL_TRADITIONAL),
            // OO: ○ + 一…九, digit by digit.
            TaiwaneseDigital => digits_sub(n, &CJK_DIGITS_25CB),

            // OO: 영일이삼사오육칠팔구, digit by digit (10 → 일영).
            KoreanDigital => digits_sub(n, &KOREAN_DIGITS),
            // OO: 零一二…九, digit by digit (10 → 一零).
            KoreanDigital2 => digits_sub(n, &CJK_DIGITS_96F6),
            // ECMA 일, 이, 삼; OO glyphs 일…구 십백천만: Sino-Korean with units,
            // no 일 before 십/백/천/만 (LO NATNUM11 "omit all").
            KoreanCounting => cjk_grouped(n, &KOREAN_COUNTING),
            // ECMA/OO: native Korean 하나, 둘, 셋 … 열, 스물 … 아흔아홉 (1–99).
            KoreanLegal => korean_legal(n),
            // ECMA ganada 가, 나, 다 (14) and chosung ㄱ, ㄴ, ㄷ (14): repeat
            // scheme like the Latin letters (LO cycles instead; doubt).
            Ganada => repeat_alpha(n, &GANADA),
            Chosung => repeat_alpha(n, &CHOSUNG),

            // Vietnamese cardinal words, lower case: một, hai, ba.
            VietnameseCounting => vietnamese_counting(n),

            // ECMA: the Russian alphabet without ё й ъ ь (29 letters, with ы);
            // LO table_CyrillicLowerLetter_ru is the same 29. Repeat scheme as
            // upperLetter (ECMA); LO uses "аа, аб" instead (doubt).
            RussianLower => repeat_alpha(n, &RUSSIAN_LOWER),
            RussianUpper => repeat_alpha(n, &RUSSIAN_UPPER),

            // ECMA: "- 1 -, - 2 -"; §17.16.4.3.1 ArabicDash "- 123 -".
            NumberInDash => {
                if n >= 0 {
                    format!("- {n} -")
                } else {
                    decimal(n)
                }
            }

            // ECMA 01, 02, …, 09, 10: a zero added to 1–9 only.
            DecimalZero => {
                if (0..10).contains(&n) {
                    format!("0{n}")
                } else {
                    decimal(n)
                }
            }

            // DOCX "א, י, ק" (1, 10, 100): Hebrew numerals (gematria).
            Hebrew1 => hebrew1(n),
            // DOCX א, ב, ג: the 22 letters; past 22, ECMA writes the letter
            // once and then ת once per 22 subtracted.
            Hebrew2 => hebrew2(n),
            // DOCX "U+0623, U+0628, U+062A" (أ, ب, ت); ECMA 28 letters.
            ArabicAlpha => repeat_alpha(n, &ARABIC_ALPHA),
            // DOCX "U+0623, U+0628, U+062C" (أ, ب, ج); abjad order as LO.
            ArabicAbjad => repeat_alpha(n, &ARABIC_ABJAD),

            // OI b: Word's hindiVowels are the consonants; DOCX क, ख, ग
            // (U+0915…); ECMA/OO: U+0915–U+0939 (37).
            HindiVowels => repeat_alpha(n, &HINDI_VOWELS_WORD),
            // OI b: Word's hindiConsonants are the vowels; DOCX अ, आ, इ
            // (U+0905…); ECMA/OO: U+0905–U+0914, अं, अः (18).
            HindiConsonants => repeat_alpha(n, &HINDI_CONSONANTS_WORD),
            // DOCX १, २, ३ (U+0967…): Devanagari digits.
            HindiNumbers => digits_sub(n, &DEVANAGARI_DIGITS),
            // DOCX एक, दो, तीन: Hindi number words.
            HindiCounting => hindi_counting(n),

            // ECMA: U+0E01, U+0E02, U+0E04, U+0E07–U+0E23, U+0E25,
            // U+0E27–U+0E2E (41); OO uses exactly this set. LO also has ฤ ฦ.
            ThaiLetters => repeat_alpha(n, &thai_letters()),
            // Thai digits ๑, ๒, ๓ (OO set U+0E50–U+0E59).
            ThaiNumbers => digits_sub(n, &THAI_DIGITS),
            // Thai number words หนึ่ง, สอง, สาม (OO glyph set incl. เอ็ด, ยี่).
            ThaiCounting => thai_counting(n),
        }
    }
}

/// Renders `n` in the `ST_NumberFormat` named `format` (e.g. "lowerRoman").
pub(crate) fn format_number(format: &str, n: i64) -> String {
    NumFmt::parse(format).render(n)
}

// ---------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------

const LATIN_UPPER: [&str; 26] = [
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S",
    "T", "U", "V", "W", "X", "Y", "Z",
];
const LATIN_LOWER: [&str; 26] = [
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s",
    "t", "u", "v", "w", "x", "y", "z",
];

/// `*` `†` `‡` `§` (LO table_Chicago: 0x002a, 0x2020, 0x2021, 0x00a7).
const CHICAGO: [&str; 4] = ["*", "\u{2020}", "\u{2021}", "\u{00A7}"];

/// 〇 一 二 三 四 五 六 七 八 九 (zero U+3007).
const CJK_DIGITS_3007: [&str; 10] =
    ["\u{3007}", "一", "二", "三", "四", "五", "六", "七", "八", "九"];
/// ○ 一 … 九 (zero U+25CB WHITE CIRCLE).
const CJK_DIGITS_25CB: [&str; 10] =
    ["\u{25CB}", "一", "二", "三", "四", "五", "六", "七", "八", "九"];
/// 零 一 … 九 (zero U+96F6).
const CJK_DIGITS_96F6: [&str; 10] =
    ["\u{96F6}", "一", "二", "三", "四", "五", "六", "七", "八", "九"];
const KOREAN_DIGITS: [&str; 10] = ["영", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구"];
const FULLWIDTH_DIGITS: [&str; 10] = ["０", "１", "２", "３", "４", "５", "６", "７", "８", "９"];
const DEVANAGARI_DIGITS: [&str; 10] = ["०", "१", "२", "३", "४", "५", "६", "७", "८", "९"];
const THAI_DIGITS: [&str; 10] = ["๐", "๑", "๒", "๓", "๔", "๕", "๖", "๗", "๘", "๙"];

/// Heavenly stems 甲乙丙丁戊己庚辛壬癸 (LO table_TianGan_zh).
const STEMS: [&str; 10] = ["甲", "乙", "丙", "丁", "戊", "己", "庚", "辛", "壬", "癸"];
/// Earthly branches 子丑寅卯辰巳午未申酉戌亥 (LO table_DiZi_zh).
const BRANCHES: [&str; 12] =
    ["子", "丑", "寅", "卯", "辰", "巳", "午", "未", "申", "酉", "戌", "亥"];

/// ㈠ … ㈩ (U+3220–U+3229, PARENTHESIZED IDEOGRAPH ONE … TEN).
const PAREN_IDEOGRAPHS: [&str; 10] = [
    "\u{3220}", "\u{3221}", "\u{3222}", "\u{3223}", "\u{3224}", "\u{3225}", "\u{3226}", "\u{3227}",
    "\u{3228}", "\u{3229}",
];

/// Half-width katakana in a-i-u-e-o order: U+FF71–U+FF9C, U+FF66, U+FF9D.
const AIUEO_HALF: [&str; 46] = [
    "ｱ", "ｲ", "ｳ", "ｴ", "ｵ", "ｶ", "ｷ", "ｸ", "ｹ", "ｺ", "ｻ", "ｼ", "ｽ", "ｾ", "ｿ", "ﾀ", "ﾁ", "ﾂ", "ﾃ",
    "ﾄ", "ﾅ", "ﾆ", "ﾇ", "ﾈ", "ﾉ", "ﾊ", "ﾋ", "ﾌ", "ﾍ", "ﾎ", "ﾏ", "ﾐ", "ﾑ", "ﾒ", "ﾓ", "ﾔ", "ﾕ", "ﾖ",
    "ﾗ", "ﾘ", "ﾙ", "ﾚ", "ﾛ", "ﾜ", "ｦ", "ﾝ",
];
/// Full-width katakana in the same order (no ヰ ヱ: OI c says 46 values).
const AIUEO_FULL: [&str; 46] = [
    "ア", "イ", "ウ", "エ", "オ", "カ", "キ", "ク", "ケ", "コ", "サ", "シ", "ス", "セ", "ソ", "タ",
    "チ", "ツ", "テ", "ト", "ナ", "ニ", "ヌ", "ネ", "ノ", "ハ", "ヒ", "フ", "ヘ", "ホ", "マ", "ミ",
    "ム", "メ", "モ", "ヤ", "ユ", "ヨ", "ラ", "リ", "ル", "レ", "ロ", "ワ", "ヲ", "ン",
];
/// Iroha order, full width, with ン last (48).
const IROHA_FULL: [&str; 48] = [
    "イ", "ロ", "ハ", "ニ", "ホ", "ヘ", "ト", "チ", "リ", "ヌ", "ル", "ヲ", "ワ", "カ", "ヨ", "タ",
    "レ", "ソ", "ツ", "ネ", "ナ", "ラ", "ム", "ウ", "ヰ", "ノ", "オ", "ク", "ヤ", "マ", "ケ", "フ",
    "コ", "エ", "テ", "ア", "サ", "キ", "ユ", "メ", "ミ", "シ", "ヱ", "ヒ", "モ", "セ", "ス", "ン",
];

/// Iroha order in half-width katakana; ヰ and ヱ stay full width (they have
/// no half-width form; OO's glyph set for `iroha` has U+30F0 and U+30F1).
fn iroha_half() -> Vec<&'static str> {
    IROHA_FULL
        .iter()
        .map(|&full| {
            AIUEO_FULL
                .iter()
                .zip(AIUEO_HALF)
                .find(|&(&c, _)| c == full)
                .map_or(full, |(_, half)| half)
        })
        .collect()
}

const GANADA: [&str; 14] =
    ["가", "나", "다", "라", "마", "바", "사", "아", "자", "차", "카", "타", "파", "하"];
const CHOSUNG: [&str; 14] =
    ["ㄱ", "ㄴ", "ㄷ", "ㄹ", "ㅁ", "ㅂ", "ㅅ", "ㅇ", "ㅈ", "ㅊ", "ㅋ", "ㅌ", "ㅍ", "ㅎ"];

/// а–и, к–п, р–щ, ы, э, ю, я (no ё й ъ ь) — ECMA; LO table_CyrillicLowerLetter_ru.
const RUSSIAN_LOWER: [&str; 29] = [
    "а", "б", "в", "г", "д", "е", "ж", "з", "и", "к", "л", "м", "н", "о", "п", "р", "с", "т", "у",
    "ф", "х", "ц", "ч", "ш", "щ", "ы", "э", "ю", "я",
];
const RUSSIAN_UPPER: [&str; 29] = [
    "А", "Б", "В", "Г", "Д", "Е", "Ж", "З", "И", "К", "Л", "М", "Н", "О", "П", "Р", "С", "Т", "У",
    "Ф", "Х", "Ц", "Ч", "Ш", "Щ", "Ы", "Э", "Ю", "Я",
];

/// The 22 Hebrew letters without final forms (LO table_Alphabet_he).
const HEBREW_LETTERS: [&str; 22] = [
    "א", "ב", "ג", "ד", "ה", "ו", "ז", "ח", "ט", "י", "כ", "ל", "מ", "נ", "ס", "ע", "פ", "צ", "ק",
    "ר", "ש", "ת",
];
const HEBREW_ONES: [&str; 10] = ["", "א", "ב", "ג", "ד", "ה", "ו", "ז", "ח", "ט"];
const HEBREW_TENS: [&str; 10] = ["", "י", "כ", "ל", "מ", "נ", "ס", "ע", "פ", "צ"];
/// 100–400 ק ר ש ת, 500–900 the final forms ך ם ן ף ץ (ECMA; OO glyph set).
const HEBREW_HUNDREDS: [&str; 10] = ["", "ק", "ר", "ש", "ת", "ך", "ם", "ן", "ף", "ץ"];

/// أ ب ت ث ج ح خ د ذ ر ز س ش ص ض ط ظ ع غ ف ق ك ل م ن ه و ي (OO glyph set).
const ARABIC_ALPHA: [&str; 28] = [
    "\u{0623}", "\u{0628}", "\u{062A}", "\u{062B}", "\u{062C}", "\u{062D}", "\u{062E}", "\u{062F}",
    "\u{0630}", "\u{0631}", "\u{0632}", "\u{0633}", "\u{0634}", "\u{0635}", "\u{0636}", "\u{0637}",
    "\u{0638}", "\u{0639}", "\u{063A}", "\u{0641}", "\u{0642}", "\u{0643}", "\u{0644}", "\u{0645}",
    "\u{0646}", "\u{0647}", "\u{0648}", "\u{064A}",
];
/// أ ب ج د ه و ز ح ط ي ك ل م ن س ع ف ص ق ر ش ت ث خ ذ ض ظ غ
/// (LO table_Alphabet_ar_abjad order, first letter أ per DOCX).
const ARABIC_ABJAD: [&str; 28] = [
    "\u{0623}", "\u{0628}", "\u{062C}", "\u{062F}", "\u{0647}", "\u{0648}", "\u{0632}", "\u{062D}",
    "\u{0637}", "\u{064A}", "\u{0643}", "\u{0644}", "\u{0645}", "\u{0646}", "\u{0633}", "\u{0639}",
    "\u{0641}", "\u{0635}", "\u{0642}", "\u{0631}", "\u{0634}", "\u{062A}", "\u{062B}", "\u{062E}",
    "\u{0630}", "\u{0636}", "\u{0638}", "\u{063A}",
];

/// Word's `hindiVowels`: the consonants U+0915–U+0939 (OI b; ECMA/OO list).
const HINDI_VOWELS_WORD: [&str; 37] = [
    "\u{0915}", "\u{0916}", "\u{0917}", "\u{0918}", "\u{0919}", "\u{091A}", "\u{091B}", "\u{091C}",
    "\u{091D}", "\u{091E}", "\u{091F}", "\u{0920}", "\u{0921}", "\u{0922}", "\u{0923}", "\u{0924}",
    "\u{0925}", "\u{0926}", "\u{0927}", "\u{0928}", "\u{0929}", "\u{092A}", "\u{092B}", "\u{092C}",
    "\u{092D}", "\u{092E}", "\u{092F}", "\u{0930}", "\u{0931}", "\u{0932}", "\u{0933}", "\u{0934}",
    "\u{0935}", "\u{0936}", "\u{0937}", "\u{0938}", "\u{0939}",
];
/// Word's `hindiConsonants`: the vowels U+0905–U+0914, then अं and अः (OI b).
const HINDI_CONSONANTS_WORD: [&str; 18] = [
    "\u{0905}",
    "\u{0906}",
    "\u{0907}",
    "\u{0908}",
    "\u{0909}",
    "\u{090A}",
    "\u{090B}",
    "\u{090C}",
    "\u{090D}",
    "\u{090E}",
    "\u{090F}",
    "\u{0910}",
    "\u{0911}",
    "\u{0912}",
    "\u{0913}",
    "\u{0914}",
    "\u{0905}\u{0902}",
    "\u{0905}\u{0903}",
];

/// ก ข ค, ง … ร (U+0E07–U+0E23), ล, ว … ฮ (U+0E27–U+0E2E): 41 letters.
fn thai_letters() -> Vec<&'static str> {
    const ALL: [&str; 46] = [
        "ก", "ข", "ฃ", "ค", "ฅ", "ฆ", "ง", "จ", "ฉ", "ช", "ซ", "ฌ", "ญ", "ฎ", "ฏ", "ฐ", "ฑ", "ฒ",
        "ณ", "ด", "ต", "ถ", "ท", "ธ", "น", "บ", "ป", "ผ", "ฝ", "พ", "ฟ", "ภ", "ม", "ย", "ร", "ฤ",
        "ล", "ฦ", "ว", "ศ", "ษ", "ส", "ห", "ฬ", "อ", "ฮ",
    ];
    // ALL[i] is U+0E01 + i. Skip ฃ ฅ ฆ (U+0E03, U+0E05, U+0E06) and ฤ ฦ.
    ALL.iter()
        .enumerate()
        .filter(|(i, _)| !matches!(0x0E01 + *i as u32, 0x0E03 | 0x0E05 | 0x0E06 | 0x0E24 | 0x0E26))
        .map(|(_, c)| *c)
        .collect()
}

// ---------------------------------------------------------------------------
// Generic helpers
// ---------------------------------------------------------------------------

fn decimal(n: i64) -> String {
    n.to_string()
}

/// Word's letter scheme: glyph `(n-1) % len`, written `(n-1) / len + 1` times.
fn repeat_alpha(n: i64, table: &[&str]) -> String {
    if n <= 0 || table.is_empty() {
        return decimal(n);
    }
    let len = table.len() as u64;
    let k = (n as u64) - 1;
    let times = k / len + 1;
    if times > MAX_REPEAT {
        return decimal(n);
    }
    match table.get((k % len) as usize) {
        Some(glyph) => glyph.repeat(times as usize),
        Option::None => decimal(n),
    }
}

/// Restart at the first glyph after the last one.
fn cycle(n: i64, table: &[&str]) -> String {
    if n <= 0 || table.is_empty() {
        return decimal(n);
    }
    let k = ((n as u64) - 1) % table.len() as u64;
    match table.get(k as usize) {
        Some(glyph) => (*glyph).to_string(),
        Option::None => decimal(n),
    }
}

/// The glyph for 1..=len, decimal otherwise.
fn table_or_decimal(n: i64, table: &[&str]) -> String {
    if n >= 1 && (n as u64) <= table.len() as u64 {
        match table.get((n - 1) as usize) {
            Some(glyph) => (*glyph).to_string(),
            Option::None => decimal(n),
        }
    } else {
        decimal(n)
    }
}

/// Consecutive code points `first` … for 1..=count, decimal otherwise.
fn enclosed(n: i64, first: u32, count: i64) -> String {
    if (1..=count).contains(&n) {
        match char::from_u32(first + (n - 1) as u32) {
            Some(c) => c.to_string(),
            Option::None => decimal(n),
        }
    } else {
        decimal(n)
    }
}

/// Each decimal digit replaced by a glyph (`digits[0]` is the zero glyph).
fn digits_sub(n: i64, digits: &[&str; 10]) -> String {
    if n < 0 {
        return decimal(n);
    }
    n.to_string()
        .bytes()
        .map(|b| digits.get((b.wrapping_sub(b'0')) as usize).copied().unwrap_or(""))
        .collect()
}

// ---------------------------------------------------------------------------
// Roman
// ---------------------------------------------------------------------------

/// Upper-case roman numeral for n ≥ 1; thousands as repeated M (LO toRoman).
fn roman(n: i64) -> Option<String> {
    if n <= 0 {
        return Option::None;
    }
    let thousands = (n / 1000) as u64;
    if thousands > MAX_REPEAT {
        return Option::None;
    }
    const TABLE: [(i64, &str); 12] = [
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = "M".repeat(thousands as usize);
    let mut rest = n % 1000;
    for (value, digits) in TABLE {
        while rest >= value {
            out.push_str(digits);
            rest -= value;
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// English
// ---------------------------------------------------------------------------

const EN_ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const EN_TENS: [&str; 10] =
    ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

/// Largest value spelled out; Word's \* CardText / \* OrdText stop at
/// 999,999 (per Word's field documentation; no file in the corpus goes
/// that high to confirm it); above it the label is decimal.
const EN_MAX: i64 = 999_999;

fn en_below_100(n: usize) -> String {
    if n < 20 {
        return EN_ONES.get(n).copied().unwrap_or("").to_string();
    }
    let tens = EN_TENS.get(n / 10).copied().unwrap_or("");
    if n.is_multiple_of(10) {
        tens.to_string()
    } else {
        format!("{tens}-{}", EN_ONES.get(n % 10).copied().unwrap_or(""))
    }
}

fn en_below_1000(n: usize) -> String {
    let hundreds = n / 100;
    let rest = n % 100;
    match (hundreds, rest) {
        (0, r) => en_below_100(r),
        (h, 0) => format!("{} hundred", en_below_100(h)),
        (h, r) => format!("{} hundred {}", en_below_100(h), en_below_100(r)),
    }
}

/// Lower-case US English words ("one hundred one", no "and").
fn en_words(n: i64) -> Option<String> {
    if !(0..=EN_MAX).contains(&n) {
        return Option::None;
    }
    let n = n as usize;
    let thousands = n / 1000;
    let rest = n % 1000;
    Some(match (thousands, rest) {
        (0, r) => en_below_1000(r),
        (t, 0) => format!("{} thousand", en_below_1000(t)),
        (t, r) => format!("{} thousand {}", en_below_1000(t), en_below_1000(r)),
    })
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        Option::None => String::new(),
    }
}

fn cardinal_text(n: i64) -> String {
    match en_words(n) {
        Some(words) => capitalize(&words),
        Option::None => decimal(n),
    }
}

fn ordinal_text(n: i64) -> String {
    let Some(words) = en_words(n) else {
        return decimal(n);
    };
    // Only the last word becomes ordinal: "twenty-one" → "twenty-first".
    let split = words.rfind([' ', '-']).map(|i| i + 1).unwrap_or(0);
    let (head, last) = words.split_at(split);
    let last = match last {
        "one" => "first".to_string(),
        "two" => "second".to_string(),
        "three" => "third".to_string(),
        "five" => "fifth".to_string(),
        "eight" => "eighth".to_string(),
        "nine" => "ninth".to_string(),
        "twelve" => "twelfth".to_string(),
        w => match w.strip_suffix('y') {
            Some(stem) => format!("{stem}ieth"),
            Option::None => format!("{w}th"),
        },
    };
    capitalize(&format!("{head}{last}"))
}

fn ordinal(n: i64) -> String {
    if n < 0 {
        return decimal(n);
    }
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

// ---------------------------------------------------------------------------
// Chinese / Japanese / Korean
// ---------------------------------------------------------------------------

/// When the digit 1 is left out before a unit character.
#[derive(Clone, Copy)]
enum ElideOne {
    /// Always written (legal formats: 壱拾, 壹佰).
    Never,
    /// Only a leading 一十 becomes 十 (Chinese: 十, 十一, 一百一十, 十万).
    LeadingTen,
    /// Never written before 十/百/千 (Japanese/Korean: 十, 百十一, 千).
    Always,
}

struct CjkStyle {
    digits: [&'static str; 10],
    /// Written once for each run of zeros inside the number (None: nothing).
    zero: Option<&'static str>,
    /// 十, 百, 千.
    small: [&'static str; 3],
    /// 万, 億, 兆, 京 (10^4, 10^8, 10^12, 10^16).
    big: [&'static str; 4],
    elide: ElideOne,
    /// Korean: 만, not 일만, for exactly one myriad in a group.
    elide_one_before_myriad: bool,
}

const JAPANESE_COUNTING: CjkStyle = CjkStyle {
    digits: CJK_DIGITS_3007,
    zero: Option::None,
    small: ["十", "百", "千"],
    big: ["万", "億", "兆", "京"],
    elide: ElideOne::Always,
    elide_one_before_myriad: false,
};
const JAPANESE_LEGAL: CjkStyle = CjkStyle {
    digits: ["", "壱", "弐", "参", "四", "伍", "六", "七", "八", "九"],
    zero: Option::None,
    small: ["拾", "百", "阡"],
    big: ["萬", "億", "兆", "京"],
    elide: ElideOne::Never,
    elide_one_before_myriad: false,
};
const CHINESE_COUNTING_THOUSAND: CjkStyle = CjkStyle {
    digits: CJK_DIGITS_25CB,
    zero: Some("\u{25CB}"),
    small: ["十", "百", "千"],
    big: ["万", "亿", "兆", "京"],
    elide: ElideOne::LeadingTen,
    elide_one_before_myriad: false,
};
const CHINESE_LEGAL_SIMPLIFIED: CjkStyle = CjkStyle {
    digits: ["零", "壹", "贰", "叁", "肆", "伍", "陆", "柒", "捌", "玖"],
    zero: Some("零"),
    small: ["拾", "佰", "仟"],
    big: ["萬", "億", "兆", "京"],
    elide: ElideOne::Never,
    elide_one_before_myriad: false,
};
const IDEOGRAPH_LEGAL_TRADITIONAL: CjkStyle = CjkStyle {
    digits: ["", "壹", "貳", "參", "肆", "伍", "陸", "柒", "捌", "玖"],
    zero: Option::None,
    small: ["拾", "佰", "仟"],
    big: ["萬", "億", "兆", "京"],
    elide: ElideOne::Never,
    elide_one_before_myriad: false,
};
const KOREAN_COUNTING: CjkStyle = CjkStyle {
    digits: KOREAN_DIGITS,
    zero: Option::None,
    small: ["십", "백", "천"],
    big: ["만", "억", "조", "경"],
    elide: ElideOne::Always,
    elide_one_before_myriad: true,
};

/// East-Asian counting with 十百千 inside groups of four digits and 万/億/…
/// between groups. 0 renders as the zero digit; negatives as decimal.
fn cjk_grouped(n: i64, style: &CjkStyle) -> String {
    if n < 0 {
        return decimal(n);
    }
    if n == 0 {
        return match style.zero {
            Some(z) => z.to_string(),
            Option::None => decimal(n),
        };
    }
    // Four-digit groups, most significant first. i64::MAX < 10^20: ≤ 5 groups.
    let mut groups = Vec::new();
    let mut rest = n as u64;
    while rest > 0 {
        groups.push(rest % 10_000);
        rest /= 10_000;
    }
    groups.reverse();
    let count = groups.len();
    let mut out = String::new();
    let mut started = false;
    let mut pending_zero = false;
    for (index, group) in groups.iter().enumerate() {
        let big = count - 1 - index; // 0: units, 1: 万, 2: 億 …
        if *group == 0 {
            if started {
                pending_zero = true;
            }
            continue;
        }
        let places =
            [(3, group / 1000), (2, group / 100 % 10), (1, group / 10 % 10), (0, group % 10)];
        for (place, digit) in places {
            if digit == 0 {
                if started {
                    pending_zero = true;
                }
                continue;
            }
            if pending_zero {
                if let Some(z) = style.zero {
                    out.push_str(z);
                }
                pending_zero = false;
            }
            let unit =
                if place > 0 { style.small.get(place - 1).copied().unwrap_or("") } else { "" };
            let omit = digit == 1
                && match (place, style.elide) {
                    (0, _) => style.elide_one_before_myriad && *group == 1 && big == 1,
                    (_, ElideOne::Never) => false,
                    (p, ElideOne::LeadingTen) => p == 1 && !started,
                    (_, ElideOne::Always) => true,
                };
            if !omit {
                out.push_str(style.digits.get(digit as usize).copied().unwrap_or(""));
            }
            out.push_str(unit);
            started = true;
        }
        if big > 0 {
            out.push_str(style.big.get(big - 1).copied().unwrap_or(""));
            // Zeros at the end of a group sit before its unit: no gap marker.
            pending_zero = false;
        }
    }
    out
}

/// chineseCounting / taiwaneseCounting (DOCX 一, 十, 一○○).
fn chinese_counting(n: i64) -> String {
    if n < 0 {
        return decimal(n);
    }
    let d = &CJK_DIGITS_25CB;
    match n {
        0..=9 => d.get(n as usize).copied().unwrap_or("").to_string(),
        10..=99 => {
            let tens = (n / 10) as usize;
            let ones = (n % 10) as usize;
            let mut out = String::new();
            if tens > 1 {
                out.push_str(d.get(tens).copied().unwrap_or(""));
            }
            out.push('十');
            if ones > 0 {
                out.push_str(d.get(ones).copied().unwrap_or(""));
            }
            out
        }
        _ => digits_sub(n, d),
    }
}

/// 甲子, 乙丑, … 癸亥 (60), then again from 甲子.
fn sexagenary(n: i64) -> String {
    if n <= 0 {
        return decimal(n);
    }
    let k = ((n as u64) - 1) % 60;
    let stem = STEMS.get((k % 10) as usize).copied().unwrap_or("");
    let branch = BRANCHES.get((k % 12) as usize).copied().unwrap_or("");
    format!("{stem}{branch}")
}

/// Native Korean numbers 1–99 (하나 … 아흔아홉); decimal otherwise.
fn korean_legal(n: i64) -> String {
    const ONES: [&str; 10] = ["", "하나", "둘", "셋", "넷", "다섯", "여섯", "일곱", "여덟", "아홉"];
    const TENS: [&str; 10] =
        ["", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔"];
    if !(1..=99).contains(&n) {
        return decimal(n);
    }
    let tens = TENS.get((n / 10) as usize).copied().unwrap_or("");
    let ones = ONES.get((n % 10) as usize).copied().unwrap_or("");
    format!("{tens}{ones}")
}

// ---------------------------------------------------------------------------
// Hebrew
// ---------------------------------------------------------------------------

/// Hebrew numerals: hundreds + tens + ones, 15 → טו and 16 → טז; a thousands
/// digit (1000–9999) is written with the units letters in front (ECMA as
/// quoted by implementations; LO writes "אלף" instead — doubt).
fn hebrew1(n: i64) -> String {
    if !(1..=9999).contains(&n) {
        return decimal(n);
    }
    let n = n as usize;
    let mut out = String::new();
    out.push_str(HEBREW_ONES.get(n / 1000).copied().unwrap_or(""));
    out.push_str(HEBREW_HUNDREDS.get(n / 100 % 10).copied().unwrap_or(""));
    match n % 100 {
        15 => out.push_str("טו"),
        16 => out.push_str("טז"),
        r => {
            out.push_str(HEBREW_TENS.get(r / 10).copied().unwrap_or(""));
            out.push_str(HEBREW_ONES.get(r % 10).copied().unwrap_or(""));
        }
    }
    out
}

/// Letters 1–22; past 22 the letter for the remainder once, then ת once per
/// 22 subtracted (ECMA: 23 → את, 45 → אתת).
fn hebrew2(n: i64) -> String {
    if n <= 0 {
        return decimal(n);
    }
    let k = (n as u64) - 1;
    let extra = k / 22;
    if extra >= MAX_REPEAT {
        return decimal(n);
    }
    let letter = HEBREW_LETTERS.get((k % 22) as usize).copied().unwrap_or("");
    format!("{letter}{}", "ת".repeat(extra as usize))
}

// ---------------------------------------------------------------------------
// Hindi, Thai, Vietnamese words
// ---------------------------------------------------------------------------

const HINDI_1_99: [&str; 100] = [
    "",
    "एक",
    "दो",
    "तीन",
    "चार",
    "पाँच",
    "छह",
    "सात",
    "आठ",
    "नौ",
    "दस",
    "ग्यारह",
    "बारह",
    "तेरह",
    "चौदह",
    "पंद्रह",
    "सोलह",
    "सत्रह",
    "अठारह",
    "उन्नीस",
    "बीस",
    "इक्कीस",
    "बाईस",
    "तेईस",
    "चौबीस",
    "पच्चीस",
    "छब्बीस",
    "सत्ताईस",
    "अट्ठाईस",
    "उनतीस",
    "तीस",
    "इकतीस",
    "बत्तीस",
    "तैंतीस",
    "चौंतीस",
    "पैंतीस",
    "छत्तीस",
    "सैंतीस",
    "अड़तीस",
    "उनतालीस",
    "चालीस",
    "इकतालीस",
    "बयालीस",
    "तैंतालीस",
    "चौवालीस",
    "पैंतालीस",
    "छियालीस",
    "सैंतालीस",
    "अड़तालीस",
    "उनचास",
    "पचास",
    "इक्यावन",
    "बावन",
    "तिरपन",
    "चौवन",
    "पचपन",
    "छप्पन",
    "सत्तावन",
    "अट्ठावन",
    "उनसठ",
    "साठ",
    "इकसठ",
    "बासठ",
    "तिरसठ",
    "चौंसठ",
    "पैंसठ",
    "छियासठ",
    "सड़सठ",
    "अड़सठ",
    "उनहत्तर",
    "सत्तर",
    "इकहत्तर",
    "बहत्तर",
    "तिहत्तर",
    "चौहत्तर",
    "पचहत्तर",
    "छिहत्तर",
    "सतहत्तर",
    "अठहत्तर",
    "उन्यासी",
    "अस्सी",
    "इक्यासी",
    "बयासी",
    "तिरासी",
    "चौरासी",
    "पचासी",
    "छियासी",
    "सत्तासी",
    "अट्ठासी",
    "नवासी",
    "नब्बे",
    "इक्यानबे",
    "बानबे",
    "तिरानबे",
    "चौरानबे",
    "पंचानबे",
    "छियानबे",
    "सत्तानबे",
    "अट्ठानबे",
    "निन्यानबे",
];

/// Hindi words: 1–99 from the table, then सौ (100), हज़ार (10^3), लाख (10^5),
/// करोड़ (10^7), each preceded by its multiplier ("एक सौ एक"). Up to 10^9 − 1.
fn hindi_counting(n: i64) -> String {
    if !(1..1_000_000_000).contains(&n) {
        return decimal(n);
    }
    let word = |v: i64| HINDI_1_99.get(v as usize).copied().unwrap_or("");
    let mut parts: Vec<String> = Vec::new();
    let mut rest = n;
    for (size, name) in [(10_000_000, "करोड़"), (100_000, "लाख"), (1000, "हज़ार"), (100, "सौ")]
    {
        let count = rest / size;
        if count > 0 {
            parts.push(format!("{} {name}", word(count)));
        }
        rest %= size;
    }
    if rest > 0 {
        parts.push(word(rest).to_string());
    }
    parts.join(" ")
}

/// Thai words: หนึ่ง … เก้า, สิบ (10: no หนึ่ง; 20: ยี่สิบ), final 1 after a
/// higher digit is เอ็ด (11 สิบเอ็ด, 101 หนึ่งร้อยเอ็ด); ร้อย พัน หมื่น แสน, ล้าน.
fn thai_counting(n: i64) -> String {
    if n <= 0 {
        return decimal(n);
    }
    thai_words(n as u64)
}

fn thai_words(n: u64) -> String {
    const DIGITS: [&str; 10] = ["", "หนึ่ง", "สอง", "สาม", "สี่", "ห้า", "หก", "เจ็ด", "แปด", "เก้า"];
    const UNITS: [&str; 6] = ["", "สิบ", "ร้อย", "พัน", "หมื่น", "แสน"];
    let millions = n / 1_000_000;
    let block = n % 1_000_000;
    let mut out = String::new();
    if millions > 0 {
        out.push_str(&thai_words(millions));
        out.push_str("ล้าน");
    }
    let digits = [
        block / 100_000,
        block / 10_000 % 10,
        block / 1000 % 10,
        block / 100 % 10,
        block / 10 % 10,
        block % 10,
    ];
    for (i, d) in digits.iter().enumerate() {
        let place = 5 - i;
        let d = *d as usize;
        if d == 0 {
            continue;
        }
        match place {
            1 => {
                match d {
                    1 => {}
                    2 => out.push_str("ยี่"),
                    _ => out.push_str(DIGITS.get(d).copied().unwrap_or("")),
                }
                out.push_str("สิบ");
            }
            0 => {
                if d == 1 && n > 10 {
                    out.push_str("เอ็ด");
                } else {
                    out.push_str(DIGITS.get(d).copied().unwrap_or(""));
                }
            }
            p => {
                out.push_str(DIGITS.get(d).copied().unwrap_or(""));
                out.push_str(UNITS.get(p).copied().unwrap_or(""));
            }
        }
    }
    out
}

/// Vietnamese words 1–999, lower case: mười, mười lăm, hai mươi mốt,
/// một trăm lẻ một. Decimal otherwise (doubt: Word's upper limit).
fn vietnamese_counting(n: i64) -> String {
    const ONES: [&str; 10] = ["", "một", "hai", "ba", "bốn", "năm", "sáu", "bảy", "tám", "chín"];
    if !(1..=999).contains(&n) {
        return decimal(n);
    }
    let one = |d: i64| ONES.get(d as usize).copied().unwrap_or("");
    let below_100 = |v: i64| -> String {
        let tens = v / 10;
        let ones = v % 10;
        match (tens, ones) {
            (0, o) => one(o).to_string(),
            (1, 0) => "mười".to_string(),
            (1, 5) => "mười lăm".to_string(),
            (1, o) => format!("mười {}", one(o)),
            (t, 0) => format!("{} mươi", one(t)),
            (t, 1) => format!("{} mươi mốt", one(t)),
            (t, 5) => format!("{} mươi lăm", one(t)),
            (t, o) => format!("{} mươi {}", one(t), one(o)),
        }
    };
    let hundreds = n / 100;
    let rest = n % 100;
    match (hundreds, rest) {
        (0, r) => below_100(r),
        (h, 0) => format!("{} trăm", one(h)),
        (h, r) if r < 10 => format!("{} trăm lẻ {}", one(h), one(r)),
        (h, r) => format!("{} trăm {}", one(h), below_100(r)),
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::format_number as f;

    const ALL: [&str; 63] = [
        "decimal",
        "upperRoman",
        "lowerRoman",
        "upperLetter",
        "lowerLetter",
        "ordinal",
        "cardinalText",
        "ordinalText",
        "hex",
        "chicago",
        "ideographDigital",
        "japaneseCounting",
        "aiueo",
        "iroha",
        "decimalFullWidth",
        "decimalHalfWidth",
        "japaneseLegal",
        "japaneseDigitalTenThousand",
        "decimalEnclosedCircle",
        "decimalFullWidth2",
        "aiueoFullWidth",
        "irohaFullWidth",
        "decimalZero",
        "bullet",
        "ganada",
        "chosung",
        "decimalEnclosedFullstop",
        "decimalEnclosedParen",
        "decimalEnclosedCircleChinese",
        "ideographEnclosedCircle",
        "ideographTraditional",
        "ideographZodiac",
        "ideographZodiacTraditional",
        "taiwaneseCounting",
        "ideographLegalTraditional",
        "taiwaneseCountingThousand",
        "taiwaneseDigital",
        "chineseCounting",
        "chineseLegalSimplified",
        "chineseCountingThousand",
        "koreanDigital",
        "koreanCounting",
        "koreanLegal",
        "koreanDigital2",
        "vietnameseCounting",
        "russianLower",
        "russianUpper",
        "none",
        "numberInDash",
        "hebrew1",
        "hebrew2",
        "arabicAlpha",
        "arabicAbjad",
        "hindiVowels",
        "hindiConsonants",
        "hindiNumbers",
        "hindiCounting",
        "thaiLetters",
        "thaiNumbers",
        "thaiCounting",
        "bahtText",
        "dollarText",
        "custom",
    ];

    /// Every format, every awkward i64: no panic, bounded output.
    #[test]
    fn no_panic_and_bounded_for_extreme_values() {
        let values = [
            i64::MIN,
            i64::MIN + 1,
            -1_000_000,
            -27,
            -1,
            0,
            1,
            9,
            10,
            11,
            15,
            16,
            20,
            21,
            26,
            27,
            46,
            47,
            99,
            100,
            101,
            999,
            1000,
            3999,
            4000,
            9999,
            10_000,
            10_005,
            100_000,
            999_999,
            1_000_000,
            99_999_999,
            100_000_000,
            1_000_000_007,
            i64::MAX - 1,
            i64::MAX,
        ];
        for fmt in ALL {
            for &n in &values {
                let s = f(fmt, n);
                assert!(s.chars().count() <= 400, "{fmt} {n} -> {} chars", s.chars().count());
                if fmt != "none" && fmt != "bullet" && n > 0 {
                    assert!(!s.is_empty(), "{fmt} {n} empty");
                }
            }
        }
    }

    #[test]
    fn negatives_are_decimal() {
        // Word counters cannot go negative; anything without a glyph renders decimal.
        for fmt in ALL {
            if fmt == "none" || fmt == "bullet" {
                assert_eq!(f(fmt, -1), "");
            } else {
                assert_eq!(f(fmt, -1), "-1", "{fmt}");
                assert_eq!(f(fmt, i64::MIN), i64::MIN.to_string(), "{fmt}");
            }
        }
    }

    #[test]
    fn unknown_and_custom_are_decimal() {
        // §17.9.17: absent numFmt is decimal; custom is resolved by the caller (brief).
        assert_eq!(f("custom", 7), "7");
        assert_eq!(f("noSuchFormat", 12), "12");
        assert_eq!(f("Decimal", 3), "3");
    }

    #[test]
    fn decimal_and_half_width() {
        // ECMA decimal "1, 2, 3"; decimalHalfWidth = ASCII digits.
        assert_eq!(f("decimal", 1), "1");
        assert_eq!(f("decimal", 0), "0");
        assert_eq!(f("decimal", i64::MAX), "9223372036854775807");
        assert_eq!(f("decimalHalfWidth", 12), "12");
    }

    #[test]
    fn roman() {
        // ECMA "I, II, III, IV, …, XVIII, XIX, XX, XXI"; LO toRoman / repeated M past 3999.
        assert_eq!(f("upperRoman", 4), "IV");
        assert_eq!(f("upperRoman", 1999), "MCMXCIX");
        assert_eq!(f("upperRoman", 3999), "MMMCMXCIX");
        assert_eq!(f("upperRoman", 4000), "MMMM");
        assert_eq!(f("lowerRoman", 21), "xxi");
        assert_eq!(f("lowerRoman", 0), "0");
        // Past MAX_REPEAT thousands: decimal (resource limit).
        assert_eq!(f("upperRoman", 1_000_000), "1000000");
    }

    #[test]
    fn letters() {
        // §17.16.4.3.1 ALPHABETIC: 54 → "BBB", 52 → "zz"; ECMA "…, Y, Z, AA, BB".
        assert_eq!(f("upperLetter", 1), "A");
        assert_eq!(f("upperLetter", 27), "AA");
        assert_eq!(f("upperLetter", 54), "BBB");
        assert_eq!(f("lowerLetter", 26), "z");
        assert_eq!(f("lowerLetter", 52), "zz");
        assert_eq!(f("lowerLetter", 0), "0");
    }

    #[test]
    fn ordinal() {
        // Word \* Ordinal (English): 1st 2nd 3rd 4th, 11th–13th, 21st, 112th.
        assert_eq!(f("ordinal", 1), "1st");
        assert_eq!(f("ordinal", 2), "2nd");
        assert_eq!(f("ordinal", 3), "3rd");
        assert_eq!(f("ordinal", 11), "11th");
        assert_eq!(f("ordinal", 13), "13th");
        assert_eq!(f("ordinal", 21), "21st");
        assert_eq!(f("ordinal", 112), "112th");
    }

    #[test]
    fn cardinal_text() {
        // DOCX "One, Two, Three"; brief: 21 → "Twenty-one"; US English, no "and".
        assert_eq!(f("cardinalText", 1), "One");
        assert_eq!(f("cardinalText", 3), "Three");
        assert_eq!(f("cardinalText", 21), "Twenty-one");
        assert_eq!(f("cardinalText", 101), "One hundred one");
        assert_eq!(f("cardinalText", 1234), "One thousand two hundred thirty-four");
        assert_eq!(f("cardinalText", 0), "Zero");
        assert_eq!(f("cardinalText", 1_000_000), "1000000");
    }

    #[test]
    fn ordinal_text() {
        // Word \* OrdText ("twenty-first"), first letter capitalised in lists.
        assert_eq!(f("ordinalText", 1), "First");
        assert_eq!(f("ordinalText", 2), "Second");
        assert_eq!(f("ordinalText", 12), "Twelfth");
        assert_eq!(f("ordinalText", 20), "Twentieth");
        assert_eq!(f("ordinalText", 21), "Twenty-first");
        assert_eq!(f("ordinalText", 100), "One hundredth");
        assert_eq!(f("ordinalText", 103), "One hundred third");
    }

    #[test]
    fn hex() {
        // ECMA hex "…, E, F, 10, 11, …"; DOCX "1, A, B"; brief 255 → "FF".
        assert_eq!(f("hex", 10), "A");
        assert_eq!(f("hex", 16), "10");
        assert_eq!(f("hex", 255), "FF");
    }

    #[test]
    fn chicago() {
        // ECMA "*, †, ‡, §"; LO lcl_formatChars1: "*, †, ‡, §, **, ††, …".
        assert_eq!(f("chicago", 1), "*");
        assert_eq!(f("chicago", 2), "†");
        assert_eq!(f("chicago", 4), "§");
        assert_eq!(f("chicago", 5), "**");
        assert_eq!(f("chicago", 8), "§§");
        assert_eq!(f("chicago", 9), "***");
    }

    #[test]
    fn ideograph_digital_and_ten_thousand() {
        // DOCX ideographDigital "一, 一〇, 一〇〇" (U+3007); OO: japaneseDigitalTenThousand same set.
        assert_eq!(f("ideographDigital", 1), "一");
        assert_eq!(f("ideographDigital", 10), "一〇");
        assert_eq!(f("ideographDigital", 100), "一〇〇");
        assert_eq!(f("japaneseDigitalTenThousand", 25), "二五");
        assert_eq!(f("japaneseDigitalTenThousand", 10), "一〇");
    }

    #[test]
    fn japanese_counting() {
        // 十 without 一 (OO glyph set 〇一…九十百千; LO NATNUM7 "omit one").
        assert_eq!(f("japaneseCounting", 1), "一");
        assert_eq!(f("japaneseCounting", 10), "十");
        assert_eq!(f("japaneseCounting", 11), "十一");
        assert_eq!(f("japaneseCounting", 20), "二十");
        assert_eq!(f("japaneseCounting", 100), "百");
        assert_eq!(f("japaneseCounting", 111), "百十一");
        assert_eq!(f("japaneseCounting", 1005), "千五");
        assert_eq!(f("japaneseCounting", 10_000), "一万");
    }

    #[test]
    fn japanese_legal() {
        // ECMA 壱, 弐, 参 … 壱拾; OO glyphs 壱弐参四伍六七八九拾百阡萬.
        assert_eq!(f("japaneseLegal", 1), "壱");
        assert_eq!(f("japaneseLegal", 3), "参");
        assert_eq!(f("japaneseLegal", 10), "壱拾");
        assert_eq!(f("japaneseLegal", 25), "弐拾伍");
        assert_eq!(f("japaneseLegal", 1000), "壱阡");
    }

    #[test]
    fn aiueo() {
        // ECMA U+FF71–U+FF9C, U+FF66, U+FF9D; OI c: after 46 Word starts at 1 again.
        assert_eq!(f("aiueo", 1), "ｱ");
        assert_eq!(f("aiueo", 2), "ｲ");
        assert_eq!(f("aiueo", 45), "ｦ");
        assert_eq!(f("aiueo", 46), "ﾝ");
        assert_eq!(f("aiueo", 47), "ｱ");
        // DOCX aiueoFullWidth "U+30A2, U+30A4, U+30A6"; OI c restart.
        assert_eq!(f("aiueoFullWidth", 1), "ア");
        assert_eq!(f("aiueoFullWidth", 3), "ウ");
        assert_eq!(f("aiueoFullWidth", 46), "ン");
        assert_eq!(f("aiueoFullWidth", 47), "ア");
    }

    #[test]
    fn iroha() {
        // Iroha poem order; OO iroha set = half-width + full-width ヰ ヱ + ﾝ; LO cycles.
        assert_eq!(f("irohaFullWidth", 1), "イ");
        assert_eq!(f("irohaFullWidth", 2), "ロ");
        assert_eq!(f("irohaFullWidth", 3), "ハ");
        assert_eq!(f("irohaFullWidth", 25), "ヰ");
        assert_eq!(f("irohaFullWidth", 48), "ン");
        assert_eq!(f("irohaFullWidth", 49), "イ");
        assert_eq!(f("iroha", 1), "ｲ");
        assert_eq!(f("iroha", 3), "ﾊ");
        assert_eq!(f("iroha", 25), "ヰ");
        assert_eq!(f("iroha", 43), "ヱ");
        assert_eq!(f("iroha", 48), "ﾝ");
    }

    #[test]
    fn full_width_decimal() {
        // DOCX decimalFullWidth "U+FF11, U+FF12, U+FF13"; brief: 12 → "１２" (第１２条).
        assert_eq!(f("decimalFullWidth", 1), "１");
        assert_eq!(f("decimalFullWidth", 12), "１２");
        assert_eq!(f("decimalFullWidth", 0), "０");
        assert_eq!(f("decimalFullWidth2", 105), "１０５");
    }

    #[test]
    fn enclosed_circle() {
        // ECMA: ①…⑳ then decimal ("⑲, ⑳, 21"); DOCX U+2460, U+2461, U+2462.
        assert_eq!(f("decimalEnclosedCircle", 1), "①");
        assert_eq!(f("decimalEnclosedCircle", 10), "⑩");
        assert_eq!(f("decimalEnclosedCircle", 20), "⑳");
        assert_eq!(f("decimalEnclosedCircle", 21), "21");
        assert_eq!(f("decimalEnclosedCircle", 0), "0");
        // OO: the Chinese variant only has ①…⑩, then decimal.
        assert_eq!(f("decimalEnclosedCircleChinese", 1), "①");
        assert_eq!(f("decimalEnclosedCircleChinese", 10), "⑩");
        assert_eq!(f("decimalEnclosedCircleChinese", 11), "11");
    }

    #[test]
    fn enclosed_fullstop_and_paren() {
        // DOCX decimalEnclosedFullstop U+2488…, decimalEnclosedParen U+2474…; OO: 20 then decimal.
        assert_eq!(f("decimalEnclosedFullstop", 1), "⒈");
        assert_eq!(f("decimalEnclosedFullstop", 20), "⒛");
        assert_eq!(f("decimalEnclosedFullstop", 21), "21");
        assert_eq!(f("decimalEnclosedParen", 1), "⑴");
        assert_eq!(f("decimalEnclosedParen", 20), "⒇");
        assert_eq!(f("decimalEnclosedParen", 21), "21");
    }

    #[test]
    fn decimal_zero() {
        // DOCX "01, 02, 03"; ECMA: zero added to 1–9 only; brief 5 → "05", 10 → "10".
        assert_eq!(f("decimalZero", 5), "05");
        assert_eq!(f("decimalZero", 9), "09");
        assert_eq!(f("decimalZero", 10), "10");
        assert_eq!(f("decimalZero", 100), "100");
    }

    #[test]
    fn bullet_and_none() {
        // ECMA: bullet uses lvlText (caller); none shows nothing.
        assert_eq!(f("bullet", 1), "");
        assert_eq!(f("bullet", 7), "");
        assert_eq!(f("none", 1), "");
        assert_eq!(f("none", 0), "");
    }

    #[test]
    fn korean_letters() {
        // DOCX ganada "U+AC00, U+B098, U+B2E4"; chosung "U+3131, U+3134, U+3137"; ECMA repeat.
        assert_eq!(f("ganada", 1), "가");
        assert_eq!(f("ganada", 2), "나");
        assert_eq!(f("ganada", 14), "하");
        assert_eq!(f("ganada", 15), "가가");
        assert_eq!(f("chosung", 1), "ㄱ");
        assert_eq!(f("chosung", 3), "ㄷ");
        assert_eq!(f("chosung", 14), "ㅎ");
        assert_eq!(f("chosung", 16), "ㄴㄴ");
    }

    #[test]
    fn ideograph_enclosed_circle() {
        // DOCX U+3220, U+3221, U+3222; OI a: Word parenthesises; OO: 10 glyphs, no decimal.
        assert_eq!(f("ideographEnclosedCircle", 1), "㈠");
        assert_eq!(f("ideographEnclosedCircle", 2), "㈡");
        assert_eq!(f("ideographEnclosedCircle", 10), "㈩");
        assert_eq!(f("ideographEnclosedCircle", 11), "㈠");
    }

    #[test]
    fn ideograph_traditional() {
        // ECMA "甲乙丙"; DOCX U+7532, U+4E59, U+4E19; OO: no decimal → restarts after 癸.
        assert_eq!(f("ideographTraditional", 1), "甲");
        assert_eq!(f("ideographTraditional", 2), "乙");
        assert_eq!(f("ideographTraditional", 3), "丙");
        assert_eq!(f("ideographTraditional", 4), "丁");
        assert_eq!(f("ideographTraditional", 5), "戊");
        assert_eq!(f("ideographTraditional", 6), "己");
        assert_eq!(f("ideographTraditional", 7), "庚");
        assert_eq!(f("ideographTraditional", 8), "辛");
        assert_eq!(f("ideographTraditional", 9), "壬");
        assert_eq!(f("ideographTraditional", 10), "癸");
        assert_eq!(f("ideographTraditional", 11), "甲");
    }

    #[test]
    fn ideograph_zodiac() {
        // DOCX U+5B50, U+4E11, U+5BC5 (子丑寅); OO/LO: decimal past 12.
        assert_eq!(f("ideographZodiac", 1), "子");
        assert_eq!(f("ideographZodiac", 3), "寅");
        assert_eq!(f("ideographZodiac", 12), "亥");
        assert_eq!(f("ideographZodiac", 13), "13");
        // ECMA ideographZodiacTraditional "甲子, 乙丑, 丙寅"; 60-cycle (OO: no decimal).
        assert_eq!(f("ideographZodiacTraditional", 1), "甲子");
        assert_eq!(f("ideographZodiacTraditional", 2), "乙丑");
        assert_eq!(f("ideographZodiacTraditional", 11), "甲戌");
        assert_eq!(f("ideographZodiacTraditional", 60), "癸亥");
        assert_eq!(f("ideographZodiacTraditional", 61), "甲子");
    }

    #[test]
    fn chinese_counting() {
        // DOCX "一, 十, 一○○" (1, 10, 100); OO glyphs ○一…九十.
        assert_eq!(f("chineseCounting", 1), "一");
        assert_eq!(f("chineseCounting", 10), "十");
        assert_eq!(f("chineseCounting", 11), "十一");
        assert_eq!(f("chineseCounting", 20), "二十");
        assert_eq!(f("chineseCounting", 21), "二十一");
        assert_eq!(f("chineseCounting", 100), "一○○");
        assert_eq!(f("chineseCounting", 101), "一○一");
        // ECMA: taiwaneseCounting built the same way.
        assert_eq!(f("taiwaneseCounting", 10), "十");
        assert_eq!(f("taiwaneseCounting", 25), "二十五");
    }

    #[test]
    fn chinese_counting_thousand() {
        // DOCX "一, 十, 一百"; OO glyphs ○一…九十百千万; OI e: no 零.
        assert_eq!(f("chineseCountingThousand", 1), "一");
        assert_eq!(f("chineseCountingThousand", 10), "十");
        assert_eq!(f("chineseCountingThousand", 11), "十一");
        assert_eq!(f("chineseCountingThousand", 100), "一百");
        assert_eq!(f("chineseCountingThousand", 110), "一百一十");
        assert_eq!(f("chineseCountingThousand", 101), "一百○一");
        assert_eq!(f("chineseCountingThousand", 1000), "一千");
        assert_eq!(f("chineseCountingThousand", 10_005), "一万○五");
        assert_eq!(f("chineseCountingThousand", 101_000), "十万一千");
        assert_eq!(f("taiwaneseCountingThousand", 20), "二十");
    }

    #[test]
    fn chinese_legal() {
        // DOCX chineseLegalSimplified "U+58F9, U+8D30, U+53C1" (壹贰叁); OO adds 零 拾佰仟萬.
        assert_eq!(f("chineseLegalSimplified", 1), "壹");
        assert_eq!(f("chineseLegalSimplified", 2), "贰");
        assert_eq!(f("chineseLegalSimplified", 10), "壹拾");
        assert_eq!(f("chineseLegalSimplified", 105), "壹佰零伍");
        // DOCX ideographLegalTraditional "U+58F9, U+8CB3, U+53C3" (壹貳參).
        assert_eq!(f("ideographLegalTraditional", 1), "壹");
        assert_eq!(f("ideographLegalTraditional", 3), "參");
        assert_eq!(f("ideographLegalTraditional", 20), "貳拾");
    }

    #[test]
    fn taiwanese_digital() {
        // OO: ○ + 一…九, digit by digit.
        assert_eq!(f("taiwaneseDigital", 1), "一");
        assert_eq!(f("taiwaneseDigital", 10), "一○");
        assert_eq!(f("taiwaneseDigital", 205), "二○五");
    }

    #[test]
    fn korean_digital() {
        // OO koreanDigital 영일이…; koreanDigital2 零一二….
        assert_eq!(f("koreanDigital", 1), "일");
        assert_eq!(f("koreanDigital", 10), "일영");
        assert_eq!(f("koreanDigital", 23), "이삼");
        assert_eq!(f("koreanDigital2", 1), "一");
        assert_eq!(f("koreanDigital2", 10), "一零");
    }

    #[test]
    fn korean_counting() {
        // ECMA 일, 이, 삼; OO glyphs 일…구 십백천만; LO NATNUM11 omits 일 before units.
        assert_eq!(f("koreanCounting", 1), "일");
        assert_eq!(f("koreanCounting", 3), "삼");
        assert_eq!(f("koreanCounting", 10), "십");
        assert_eq!(f("koreanCounting", 11), "십일");
        assert_eq!(f("koreanCounting", 20), "이십");
        assert_eq!(f("koreanCounting", 100), "백");
        assert_eq!(f("koreanCounting", 10_000), "만");
    }

    #[test]
    fn korean_legal() {
        // ECMA/OO native Korean: 하나, 둘, 셋 … 열, 열하나, 스물, 아흔아홉; ≥100 decimal.
        assert_eq!(f("koreanLegal", 1), "하나");
        assert_eq!(f("koreanLegal", 2), "둘");
        assert_eq!(f("koreanLegal", 10), "열");
        assert_eq!(f("koreanLegal", 11), "열하나");
        assert_eq!(f("koreanLegal", 21), "스물하나");
        assert_eq!(f("koreanLegal", 99), "아흔아홉");
        assert_eq!(f("koreanLegal", 100), "100");
    }

    #[test]
    fn vietnamese_counting() {
        // Vietnamese cardinal words (OO glyph set covers một … mười).
        assert_eq!(f("vietnameseCounting", 1), "một");
        assert_eq!(f("vietnameseCounting", 2), "hai");
        assert_eq!(f("vietnameseCounting", 10), "mười");
        assert_eq!(f("vietnameseCounting", 15), "mười lăm");
        assert_eq!(f("vietnameseCounting", 21), "hai mươi mốt");
        assert_eq!(f("vietnameseCounting", 105), "một trăm lẻ năm");
    }

    #[test]
    fn russian() {
        // ECMA/LO: 29 letters without ё й ъ ь; 1–3 → а б в; 9 и, 10 к (й skipped).
        assert_eq!(f("russianLower", 1), "а");
        assert_eq!(f("russianLower", 2), "б");
        assert_eq!(f("russianLower", 3), "в");
        assert_eq!(f("russianLower", 10), "к");
        assert_eq!(f("russianLower", 28), "ю");
        assert_eq!(f("russianLower", 29), "я");
        assert_eq!(f("russianLower", 30), "аа");
        assert_eq!(f("russianLower", 31), "бб");
        assert_eq!(f("russianUpper", 1), "А");
        assert_eq!(f("russianUpper", 26), "Ы");
        assert_eq!(f("russianUpper", 58), "ЯЯ");
    }

    #[test]
    fn number_in_dash() {
        // ECMA "- 1 -, - 2 -"; §17.16.4.3.1 ArabicDash "- 123 -".
        assert_eq!(f("numberInDash", 1), "- 1 -");
        assert_eq!(f("numberInDash", 10), "- 10 -");
        assert_eq!(f("numberInDash", 123), "- 123 -");
    }

    #[test]
    fn hebrew1() {
        // DOCX "א, י, ק" (1, 10, 100); 15 טו / 16 טז (LO makeHebrewNumber, ECMA).
        assert_eq!(f("hebrew1", 1), "א");
        assert_eq!(f("hebrew1", 10), "י");
        assert_eq!(f("hebrew1", 100), "ק");
        assert_eq!(f("hebrew1", 11), "יא");
        assert_eq!(f("hebrew1", 15), "טו");
        assert_eq!(f("hebrew1", 16), "טז");
        assert_eq!(f("hebrew1", 17), "יז");
        assert_eq!(f("hebrew1", 115), "קטו");
        assert_eq!(f("hebrew1", 400), "ת");
        // ECMA / OO glyph set: 500 is final kaf.
        assert_eq!(f("hebrew1", 500), "ך");
    }

    #[test]
    fn hebrew2() {
        // DOCX "א, ב, ג"; ECMA: past 22 the letter then ת per 22 subtracted.
        assert_eq!(f("hebrew2", 1), "א");
        assert_eq!(f("hebrew2", 2), "ב");
        assert_eq!(f("hebrew2", 11), "כ");
        assert_eq!(f("hebrew2", 22), "ת");
        assert_eq!(f("hebrew2", 23), "את");
        assert_eq!(f("hebrew2", 45), "אתת");
    }

    #[test]
    fn arabic() {
        // DOCX arabicAlpha "U+0623, U+0628, U+062A"; arabicAbjad "U+0623, U+0628, U+062C".
        assert_eq!(f("arabicAlpha", 1), "\u{0623}");
        assert_eq!(f("arabicAlpha", 2), "\u{0628}");
        assert_eq!(f("arabicAlpha", 3), "\u{062A}");
        assert_eq!(f("arabicAlpha", 28), "\u{064A}");
        assert_eq!(f("arabicAlpha", 29), "\u{0623}\u{0623}");
        assert_eq!(f("arabicAbjad", 1), "\u{0623}");
        assert_eq!(f("arabicAbjad", 3), "\u{062C}");
        assert_eq!(f("arabicAbjad", 4), "\u{062F}");
        assert_eq!(f("arabicAbjad", 10), "\u{064A}");
    }

    #[test]
    fn hindi_letters() {
        // OI b + DOCX: hindiVowels "U+0915, U+0916, U+0917" (क ख ग) — Word's swap.
        assert_eq!(f("hindiVowels", 1), "क");
        assert_eq!(f("hindiVowels", 2), "ख");
        assert_eq!(f("hindiVowels", 3), "ग");
        assert_eq!(f("hindiVowels", 37), "ह");
        assert_eq!(f("hindiVowels", 38), "कक");
        // hindiConsonants "U+0905, U+0906, U+0907" (अ आ इ), then अं अः (ECMA/OO).
        assert_eq!(f("hindiConsonants", 1), "अ");
        assert_eq!(f("hindiConsonants", 2), "आ");
        assert_eq!(f("hindiConsonants", 17), "अं");
        assert_eq!(f("hindiConsonants", 18), "अः");
    }

    #[test]
    fn hindi_numbers_and_counting() {
        // DOCX hindiNumbers "U+0967, U+0968, U+0969"; hindiCounting एक, दो, तीन.
        assert_eq!(f("hindiNumbers", 1), "१");
        assert_eq!(f("hindiNumbers", 10), "१०");
        assert_eq!(f("hindiCounting", 1), "एक");
        assert_eq!(f("hindiCounting", 2), "दो");
        assert_eq!(f("hindiCounting", 3), "तीन");
        assert_eq!(f("hindiCounting", 21), "इक्कीस");
        assert_eq!(f("hindiCounting", 101), "एक सौ एक");
    }

    #[test]
    fn thai() {
        // ECMA/OO thaiLetters: ก ข ค ง …; 41 letters.
        assert_eq!(f("thaiLetters", 1), "ก");
        assert_eq!(f("thaiLetters", 2), "ข");
        assert_eq!(f("thaiLetters", 3), "ค");
        assert_eq!(f("thaiLetters", 4), "ง");
        assert_eq!(f("thaiLetters", 41), "ฮ");
        assert_eq!(f("thaiLetters", 42), "กก");
        // OO thaiNumbers U+0E50–U+0E59.
        assert_eq!(f("thaiNumbers", 1), "๑");
        assert_eq!(f("thaiNumbers", 10), "๑๐");
        // Thai words; OO glyph set includes เอ็ด and ยี่.
        assert_eq!(f("thaiCounting", 1), "หนึ่ง");
        assert_eq!(f("thaiCounting", 10), "สิบ");
        assert_eq!(f("thaiCounting", 11), "สิบเอ็ด");
        assert_eq!(f("thaiCounting", 21), "ยี่สิบเอ็ด");
        assert_eq!(f("thaiCounting", 101), "หนึ่งร้อยเอ็ด");
    }

    #[test]
    fn baht_and_dollar_text() {
        // OI d: Word renders bahtText as decimal; OO does the same for dollarText.
        assert_eq!(f("bahtText", 5), "5");
        assert_eq!(f("bahtText", 12), "12");
        assert_eq!(f("dollarText", 5), "5");
    }

    #[test]
    fn table_sizes() {
        use super::*;
        assert_eq!(thai_letters().len(), 41);
        assert_eq!(iroha_half().len(), 48);
        // Half-width iroha keeps full-width ヰ ヱ, everything else half width.
        let full = iroha_half()
            .iter()
            .filter(|s| s.chars().all(|c| ('\u{30A0}'..='\u{30FF}').contains(&c)))
            .count();
        assert_eq!(full, 2);
        assert_eq!(AIUEO_HALF[43], "\u{FF9C}");
        assert_eq!(AIUEO_HALF[44], "\u{FF66}");
        assert_eq!(AIUEO_HALF[45], "\u{FF9D}");
        assert_eq!(AIUEO_FULL[0], "\u{30A2}");
        assert_eq!(RUSSIAN_LOWER.len(), 29);
    }
}
