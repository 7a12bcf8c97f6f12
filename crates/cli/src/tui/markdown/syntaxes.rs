//! The syntaxes code blocks are highlighted with: a trimmed set of the languages coding
//! agents show, prebuilt into `crates/cli/assets/syntaxes.packdump` and embedded in the
//! binary, instead of syntect's ~75 bundled syntaxes.
//!
//! The dump is generated, never fetched: from syntect's bundled syntaxes (the crate's own
//! packdump, available to tests through the `default-syntaxes` dev feature) filtered to
//! [`KEPT`], plus the grammars in `crates/cli/assets/syntaxes/` that syntect lacks (TOML).
//! Regenerate it after changing either with `scripts/regen-syntaxes.sh`; the test
//! `the_committed_dump_matches_its_sources` fails while it is stale.

use syntect::parsing::SyntaxSet;

/// The generated dump (`scripts/regen-syntaxes.sh`).
const DUMP: &[u8] = include_bytes!("../../../assets/syntaxes.packdump");

/// The bundled syntaxes kept, by name, with the ones they embed (JavaScript's and
/// Python's regular expressions, Java's Javadoc, the shell's builtins). A fence in a
/// markdown block naming a language left out shows that block plain.
pub const KEPT: &[&str] = &[
    "Plain Text",
    "Rust",
    "Python",
    "Regular Expressions (Python)",
    "JavaScript",
    "Regular Expressions (Javascript)",
    "JSON",
    "YAML",
    "Bourne Again Shell (bash)",
    "commands-builtin-shell-bash",
    "Go",
    "C",
    "C++",
    "Java",
    "Javadoc",
    "Markdown",
    "Diff",
    "HTML",
    "CSS",
    "XML",
    "SQL",
    "Makefile",
    "Ruby",
];

/// Fence words that name a kept syntax under another name. TypeScript is highlighted
/// with the JavaScript grammar (types stay uncoloured, the rest reads right).
const ALIASES: &[(&str, &str)] = &[
    ("ts", "js"),
    ("tsx", "js"),
    ("mts", "js"),
    ("cts", "js"),
    ("typescript", "js"),
    ("jsx", "js"),
    ("javascript", "js"),
    ("shell", "sh"),
    ("console", "sh"),
    ("zsh", "sh"),
    ("golang", "go"),
    ("c++", "cpp"),
    ("jsonc", "json"),
    ("json5", "json"),
    ("patch", "diff"),
    ("postgres", "sql"),
    ("postgresql", "sql"),
    ("psql", "sql"),
    ("sqlite", "sql"),
    ("mysql", "sql"),
];

/// The embedded set. `None` if the dump does not load (a build from a corrupted
/// checkout): code is then shown plain.
pub fn load() -> Option<SyntaxSet> {
    syntect::dumps::from_uncompressed_data(DUMP).ok()
}

/// The fence word to look up for `lang` (`ts` → `js`).
pub fn canonical(lang: &str) -> String {
    let lower = lang.trim().to_ascii_lowercase();
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == lower)
        .map_or(lower, |(_, to)| (*to).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use syntect::easy::HighlightLines;
    use syntect::highlighting::ThemeSet;
    use syntect::parsing::{SyntaxDefinition, SyntaxSetBuilder};

    const OWN_GRAMMARS: &[(&str, &str)] = &[(
        "TOML.sublime-syntax",
        include_str!("../../../assets/syntaxes/TOML.sublime-syntax"),
    )];

    /// Builds the set from its sources, as the dump should hold it.
    fn build() -> SyntaxSet {
        let bundled = SyntaxSet::load_defaults_newlines().into_builder();
        let mut trimmed = SyntaxSetBuilder::new();
        for definition in bundled.syntaxes() {
            let mut definition = definition.clone();
            if !KEPT.contains(&definition.name.as_str()) {
                // Rebuilt syntaxes reference each other's contexts by position, so a syntax
                // left out stays as a husk: its contexts, emptied of rules, and a name and
                // no extensions, so no fence word finds it.
                definition.name = format!("{} (not included)", definition.name);
                definition.file_extensions.clear();
                definition.first_line_match = None;
                definition.hidden = true;
                definition.variables.clear();
                for context in definition.contexts.values_mut() {
                    context.patterns.clear();
                    context.meta_scope.clear();
                    context.meta_content_scope.clear();
                }
            }
            trimmed.add(definition);
        }
        for (name, text) in OWN_GRAMMARS {
            let definition = SyntaxDefinition::load_from_str(text, true, None)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            trimmed.add(definition);
        }
        trimmed.build()
    }

    /// One sample per fence word agents use.
    const SAMPLES: &[(&str, &str)] = &[
        ("rust", "fn main() { let x: u32 = 1; println!(\"{x}\"); }"),
        (
            "python",
            "import re\ndef f(x):\n    return re.compile(r'a+b')  # c",
        ),
        ("js", "const re = /a+b/g; function f(x) { return `${x}`; }"),
        (
            "ts",
            "export const n: number = 1; interface A { b: string }",
        ),
        ("json", "{\"a\": [1, true, null]}"),
        (
            "toml",
            "[package]\nname = \"dsh\" # c\nversion = 1.5\nwhen = 2024-01-02\nok = true",
        ),
        ("yaml", "a: 1\nb: [x, y] # c"),
        ("bash", "for f in *.rs; do echo \"$f\"; done"),
        ("sh", "ls -la | grep x"),
        ("go", "package main\nfunc main() { fmt.Println(\"hi\") }"),
        ("c", "#include <stdio.h>\nint main(void) { return 0; }"),
        ("cpp", "template <class T> T id(T x) { return x; }"),
        ("java", "/** doc */ class A { void f() {} }"),
        ("md", "# Title\n\n*a* `b`\n\n```rust\nfn x() {}\n```"),
        ("diff", "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y"),
        (
            "html",
            "<p class=\"a\">hi<script>let x = 1;</script><style>p { color: red }</style></p>",
        ),
        ("css", "a { color: #fff; }"),
        ("sql", "SELECT a FROM t WHERE b = 'c';"),
        ("xml", "<a b=\"c\"/>"),
        ("makefile", "all:\n\tcargo build"),
        ("ruby", "def f(x) = x * 2"),
    ];

    #[test]
    fn every_language_agents_show_highlights_without_error() {
        let set = load().expect("the committed dump loads");
        let theme = &ThemeSet::load_defaults().themes["base16-ocean.dark"];
        for (lang, code) in SAMPLES {
            let word = canonical(lang);
            let syntax = set
                .find_syntax_by_token(&word)
                .unwrap_or_else(|| panic!("no syntax for {lang}"));
            assert_ne!(syntax.name, "Plain Text", "{lang}");
            let mut lines = HighlightLines::new(syntax, theme);
            for line in code.split('\n') {
                let line = format!("{line}\n");
                let regions = lines
                    .highlight_line(&line, &set)
                    .unwrap_or_else(|e| panic!("{lang}: {e}"));
                assert!(!regions.is_empty());
            }
        }
    }

    /// The dump is not byte-stable (syntect serialises hash maps), so the test compares
    /// what matters: the same syntaxes, highlighting every sample the same way.
    #[test]
    fn the_committed_dump_matches_its_sources() {
        let built = build();
        if std::env::var_os("DSH_WRITE_SYNTAXES").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/syntaxes.packdump");
            syntect::dumps::dump_to_uncompressed_file(&built, path).unwrap();
        }
        let committed = load().expect("the committed dump loads");
        let names = |set: &SyntaxSet| {
            let mut names: Vec<String> = set
                .syntaxes()
                .iter()
                .filter(|s| !s.hidden)
                .map(|s| s.name.clone())
                .collect();
            names.sort();
            names
        };
        assert_eq!(
            names(&committed),
            names(&built),
            "stale: run scripts/regen-syntaxes.sh"
        );
        let theme = &ThemeSet::load_defaults().themes["base16-ocean.dark"];
        for (lang, code) in SAMPLES {
            let word = canonical(lang);
            let highlight = |set: &SyntaxSet| {
                let syntax = set.find_syntax_by_token(&word).unwrap();
                let mut lines = HighlightLines::new(syntax, theme);
                code.split('\n')
                    .map(|l| {
                        format!(
                            "{:?}",
                            lines.highlight_line(&format!("{l}\n"), set).unwrap()
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                highlight(&committed),
                highlight(&built),
                "{lang} is highlighted differently: run scripts/regen-syntaxes.sh"
            );
        }
    }

    /// What the first code block pays to load the syntaxes: this set against syntect's
    /// bundled one (`cargo test -p dsh-cli --lib --release -- --ignored load_cost
    /// --nocapture`; see docs/performance.md).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn load_cost() {
        let time = |load: &dyn Fn() -> usize| {
            let mut runs: Vec<std::time::Duration> = (0..20)
                .map(|_| {
                    let start = std::time::Instant::now();
                    assert!(load() > 0);
                    start.elapsed()
                })
                .collect();
            runs.sort();
            runs[runs.len() / 2]
        };
        let trimmed = time(&|| load().map_or(0, |s| s.syntaxes().len()));
        let bundled = time(&|| SyntaxSet::load_defaults_newlines().syntaxes().len());
        println!("median load: trimmed {trimmed:?}, bundled {bundled:?}");
    }
}
