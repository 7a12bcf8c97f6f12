//! `docs/extension-points.md` against the code: every extension point (name, mode, payload,
//! fire sites) and every production listener (owner, scope, registration site) must have its
//! row, no row may outlive its code, and every row needs its hand-written sentence.
//!
//! Three sources, each checked against the others:
//! - the compiled list of extension points ([`live::declared_points`]): names, modes and
//!   payload types as the compiler sees them;
//! - a scan of the production crates' sources ([`scan`]): where each point is declared and
//!   dispatched, and where listeners are registered — it also catches a declaration missing
//!   from the compiled list;
//! - a real boot of the production composition with an agent ([`live::production_listeners`]):
//!   who owns each listener, in which scope, registered on which line (the kernel records the
//!   call site of every registration).
//!
//! `DSH_UPDATE_EXTENSION_POINTS=1 cargo test -p dsh-cli --test all extension_points`
//! rewrites the derived cells in place, keeps every prose cell whose row still exists, and
//! leaves `TODO` in new rows' prose cells — which still fails until someone writes them.

mod doc;
mod lexer;
mod live;
mod scan;
mod scan_tests;

use doc::{ListenerRow, PointRow};
use dsh_kernel::DispatchMode;
use live::{Live, Point};
use scan::{Call, Scan};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

const DOC: &str = "docs/extension-points.md";
const UPDATE_VAR: &str = "DSH_UPDATE_EXTENSION_POINTS";

fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.join("../..").canonicalize().unwrap()
}

fn update_requested() -> bool {
    std::env::var(UPDATE_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

#[tokio::test]
async fn the_extension_point_map_matches_the_code() {
    let root = workspace_root();
    let scan = scan::scan_workspace(&root).unwrap_or_else(|e| panic!("source scan: {e}"));
    let points = live::declared_points();
    let mut problems = declaration_problems(&scan, &points);
    let listeners = live::production_listeners(&root).await;
    let (expected_points, expected_listeners) =
        expected_rows(&scan, &points, &listeners, &mut problems);

    let path = root.join(DOC);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    let documented = doc::parse(&text).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    let (points_rows, listener_rows) =
        merge_prose(expected_points, expected_listeners, &documented);
    let regenerated =
        doc::rewrite(&text, &points_rows, &listener_rows).unwrap_or_else(|e| panic!("{DOC}: {e}"));

    if update_requested() {
        if regenerated != text {
            std::fs::write(&path, &regenerated).unwrap();
            eprintln!("{UPDATE_VAR}: rewrote the generated tables of {DOC}");
        }
    } else {
        problems.extend(row_problems(&documented, &points_rows, &listener_rows));
        if problems.is_empty() && regenerated != text {
            problems.push(
                "the tables hold the right rows but not in the generator's order or layout"
                    .to_owned(),
            );
        }
    }
    problems.extend(prose_problems(&points_rows, &listener_rows));

    if !problems.is_empty() {
        let mut report = format!("{DOC} does not match the code:\n");
        for problem in &problems {
            let _ = writeln!(report, "  - {problem}");
        }
        let _ = write!(
            report,
            "Run `{UPDATE_VAR}=1 cargo test -p dsh-cli --test all extension_points` to rewrite \
             the derived cells (prose cells are kept), then replace each `TODO` with a sentence."
        );
        panic!("{report}");
    }
}

/// The source scan and the compiled list must agree on which types are extension points.
fn declaration_problems(scan: &Scan, points: &[Point]) -> Vec<String> {
    let mut problems = Vec::new();
    let list = "`declared_points()` in crates/cli/tests/suite/extension_points/live.rs";
    for d in &scan.declared {
        let listed: Vec<&Point> = points
            .iter()
            .filter(|p| p.krate() == d.krate && p.ident() == d.ident)
            .collect();
        let path = format!("{}::{}", d.krate.replace('-', "_"), d.ident);
        if listed.is_empty() {
            let modes: Vec<String> = if d.modes.is_empty() {
                vec!["<mode>".to_owned()]
            } else {
                d.modes.iter().map(|m| m.to_lowercase()).collect()
            };
            for mode in modes {
                problems.push(format!(
                    "`{path}` ({}) is an extension point missing from {list}: add \
                     `{mode}::<{path}>()`",
                    d.site
                ));
            }
            continue;
        }
        for mode in &d.modes {
            if !listed.iter().any(|p| mode_trait(p.mode) == mode) {
                problems.push(format!(
                    "`{path}` ({}) also implements `{mode}`: add `{}::<{path}>()` to {list}",
                    d.site,
                    mode.to_lowercase()
                ));
            }
        }
    }
    for p in points {
        if !scan
            .declared
            .iter()
            .any(|d| d.krate == p.krate() && d.ident == p.ident())
        {
            problems.push(format!(
                "`{}` is in {list}, but the source scan found no `impl Event for {}` in {} \
                 (declared some way the scan cannot see? see scan.rs)",
                p.rust,
                p.ident(),
                p.krate()
            ));
        }
    }
    problems
}

fn mode_trait(mode: DispatchMode) -> &'static str {
    match mode {
        DispatchMode::Notification => "Notification",
        DispatchMode::Serial => "Serial",
        DispatchMode::Parallel => "Parallel",
        DispatchMode::Waterfall => "Waterfall",
    }
}

/// The extension point a scanned call names, if its type argument is one (generic
/// forwarding such as `AgentEvents`' own `emit::<E>` names none).
fn point_of<'p>(
    call: &Call,
    points: &'p [Point],
    problems: &mut BTreeSet<String>,
) -> Option<&'p Point> {
    let (_, mode) = lexer::method(&call.method)?;
    let matches: Vec<&Point> = points
        .iter()
        .filter(|p| p.ident() == call.ident && p.mode == mode)
        .collect();
    match matches.as_slice() {
        [one] => Some(one),
        [] => None,
        many => {
            let names: Vec<&str> = many.iter().map(|p| p.rust).collect();
            problems.insert(format!(
                "`{}` at {} could be any of {names:?}: the scan matches type names only, so \
                 extension points of one mode need distinct names",
                call.ident, call.site
            ));
            None
        }
    }
}

/// The rows the code implies, prose still unwritten.
fn expected_rows(
    scan: &Scan,
    points: &[Point],
    listeners: &[Live],
    problems: &mut Vec<String>,
) -> (Vec<PointRow>, Vec<ListenerRow>) {
    let mut ambiguity = BTreeSet::new();
    let mut fires: BTreeMap<(&str, DispatchMode), Vec<&Call>> = BTreeMap::new();
    for call in &scan.dispatches {
        if let Some(p) = point_of(call, points, &mut ambiguity) {
            fires.entry((p.name, p.mode)).or_default().push(call);
        }
    }

    // Crates bottom-up (by layer), points in declaration order.
    let order_of = |p: &Point| {
        let declared = scan
            .declared
            .iter()
            .find(|d| d.krate == p.krate() && d.ident == p.ident());
        (
            scan.depth.get(&p.krate()).copied().unwrap_or(usize::MAX),
            p.krate(),
            declared.map(|d| d.site.clone()),
            p.mode,
        )
    };
    let mut ordered: Vec<&Point> = points.iter().collect();
    ordered.sort_by_key(|p| order_of(p));

    let point_rows = ordered
        .iter()
        .map(|p| {
            let mut sites: Vec<&&Call> = fires
                .get(&(p.name, p.mode))
                .map(|c| c.iter().collect())
                .unwrap_or_default();
            sites.sort_by(|a, b| a.site.cmp(&b.site));
            let cell: Vec<String> = sites
                .iter()
                .map(|c| {
                    let strict = if c.method == "emit_strict" {
                        " (strict)"
                    } else {
                        ""
                    };
                    format!("`{}`{strict}", c.site)
                })
                .collect();
            PointRow {
                krate: p.krate(),
                name: format!("`{}`", p.name),
                mode: p.mode.as_str().to_owned(),
                rust: format!(
                    "`{}::{}`",
                    p.rust.split("::").next().unwrap_or(""),
                    p.ident()
                ),
                payload: format!("`{}`", p.payload),
                fires: if cell.is_empty() {
                    "—".to_owned()
                } else {
                    cell.join("<br>")
                },
                prose: String::new(),
            }
        })
        .collect();

    // Listeners the boot registered, then registration sites it never reached.
    let rank: BTreeMap<&str, usize> = ordered
        .iter()
        .enumerate()
        .rev()
        .map(|(i, p)| (p.name, i))
        .collect();
    let mut rows: Vec<((usize, usize), ListenerRow)> = listeners
        .iter()
        .map(|l| {
            let opt_in = if l.opt_in { " (opt-in row)" } else { "" };
            (
                (rank.get(l.event).copied().unwrap_or(usize::MAX), l.order),
                ListenerRow {
                    event: format!("`{}`", l.event),
                    owner: format!("`{}`{opt_in}", l.owner),
                    scope: l.scope.to_owned(),
                    site: format!("`{}:{}`", l.file, l.line),
                    prose: String::new(),
                },
            )
        })
        .collect();
    let live_sites: BTreeSet<(&str, u32)> = listeners
        .iter()
        .map(|l| (l.file.as_str(), l.line))
        .collect();
    for call in &scan.registrations {
        let Some(p) = point_of(call, points, &mut ambiguity) else {
            continue;
        };
        if !live_sites.contains(&(call.site.file.as_str(), call.site.line)) {
            rows.push((
                (rank.get(p.name).copied().unwrap_or(usize::MAX), usize::MAX),
                ListenerRow {
                    event: format!("`{}`", p.name),
                    owner: "— (not registered by the check's boot)".to_owned(),
                    scope: "—".to_owned(),
                    site: format!("`{}`", call.site),
                    prose: String::new(),
                },
            ));
        }
    }
    // Per extension point in dispatch order; sites the boot never reached last, by place.
    rows.sort_by(|(ra, a), (rb, b)| (ra, &a.site).cmp(&(rb, &b.site)));
    problems.extend(ambiguity);
    (point_rows, rows.into_iter().map(|(_, r)| r).collect())
}

/// Carries each documented prose cell over to the expected row with the same identity.
fn merge_prose(
    mut points: Vec<PointRow>,
    mut listeners: Vec<ListenerRow>,
    documented: &doc::Parsed,
) -> (Vec<PointRow>, Vec<ListenerRow>) {
    let prose: BTreeMap<(&str, &str), &str> = documented
        .points
        .iter()
        .map(|r| ((r.name.as_str(), r.mode.as_str()), r.prose.as_str()))
        .collect();
    for row in &mut points {
        row.prose = prose
            .get(&(row.name.as_str(), row.mode.as_str()))
            .map_or(doc::TODO.to_owned(), |p| (*p).to_owned());
    }
    let keys = doc::listener_keys(&documented.listeners);
    let prose: BTreeMap<&doc::ListenerKey, &str> = keys
        .iter()
        .zip(&documented.listeners)
        .map(|(k, r)| (k, r.prose.as_str()))
        .collect();
    let new_keys = doc::listener_keys(&listeners);
    for (row, key) in listeners.iter_mut().zip(&new_keys) {
        row.prose = prose
            .get(key)
            .map_or(doc::TODO.to_owned(), |p| (*p).to_owned());
    }
    (points, listeners)
}

/// Row by row: what to add, remove or fix for the document to match the code.
fn row_problems(
    documented: &doc::Parsed,
    points: &[PointRow],
    listeners: &[ListenerRow],
) -> Vec<String> {
    let mut problems = Vec::new();
    let doc_points: BTreeMap<(&str, &str), &PointRow> = documented
        .points
        .iter()
        .map(|r| ((r.name.as_str(), r.mode.as_str()), r))
        .collect();
    for row in points {
        match doc_points.get(&(row.name.as_str(), row.mode.as_str())) {
            None => problems.push(format!(
                "add under `### {}`: {}",
                row.krate,
                doc::render_point(row).trim_end()
            )),
            Some(have) => {
                let columns = [
                    ("crate heading", &have.krate, &row.krate),
                    ("Rust type", &have.rust, &row.rust),
                    ("payload", &have.payload, &row.payload),
                    ("fires at", &have.fires, &row.fires),
                ];
                for (column, doc, code) in columns {
                    if doc != code {
                        problems.push(format!(
                            "fix {} ({}): {column} is {doc} in the doc but {code} in the code",
                            row.name, row.mode
                        ));
                    }
                }
            }
        }
    }
    let expected: BTreeSet<(&str, &str)> = points
        .iter()
        .map(|r| (r.name.as_str(), r.mode.as_str()))
        .collect();
    for row in &documented.points {
        if !expected.contains(&(row.name.as_str(), row.mode.as_str())) {
            problems.push(format!(
                "remove the row of {} ({}): the code has no such extension point",
                row.name, row.mode
            ));
        }
    }

    let doc_keys = doc::listener_keys(&documented.listeners);
    let doc_listeners: BTreeMap<&doc::ListenerKey, &ListenerRow> =
        doc_keys.iter().zip(&documented.listeners).collect();
    let keys = doc::listener_keys(listeners);
    for (key, row) in keys.iter().zip(listeners) {
        match doc_listeners.get(key) {
            None => problems.push(format!(
                "add listener: {}",
                doc::render_listener(row).trim_end()
            )),
            Some(have) => {
                for (column, doc, code) in [
                    ("scope", &have.scope, &row.scope),
                    ("registered at", &have.site, &row.site),
                ] {
                    if doc != code {
                        problems.push(format!(
                            "fix the listener of {} owned by {}: {column} is {doc} in the doc \
                             but {code} in the code",
                            row.event, row.owner
                        ));
                    }
                }
            }
        }
    }
    let expected: BTreeSet<&doc::ListenerKey> = keys.iter().collect();
    for (key, row) in doc_keys.iter().zip(&documented.listeners) {
        if !expected.contains(key) {
            problems.push(format!(
                "remove listener: {} (the code registers no such listener)",
                doc::render_listener(row).trim_end()
            ));
        }
    }
    problems
}

fn prose_problems(points: &[PointRow], listeners: &[ListenerRow]) -> Vec<String> {
    let mut problems = Vec::new();
    for row in points.iter().filter(|r| doc::unwritten(&r.prose)) {
        problems.push(format!(
            "write what {} ({}) is for, in its last cell",
            row.name, row.mode
        ));
    }
    for row in listeners.iter().filter(|r| doc::unwritten(&r.prose)) {
        problems.push(format!(
            "write what the {} listener registered at {} decides, in its last cell",
            row.event, row.site
        ));
    }
    problems
}
