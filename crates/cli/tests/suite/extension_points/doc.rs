//! `docs/extension-points.md` as data: its two generated regions, read into rows and written
//! back from rows, keeping the hand-written prose cell of every row the code still has.

use std::collections::BTreeMap;

/// Marks the prose cell of a row the generator had no sentence for.
pub const TODO: &str = "TODO";

/// One extension point's row; every cell but `prose` is derived from the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointRow {
    /// The `### <crate>` heading the row sits under.
    pub krate: String,
    pub name: String,
    pub mode: String,
    pub rust: String,
    pub payload: String,
    pub fires: String,
    /// "What it is for".
    pub prose: String,
}

/// One listener's row; every cell but `prose` is derived from the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerRow {
    pub event: String,
    pub owner: String,
    pub scope: String,
    /// `` `file:line` ``.
    pub site: String,
    /// "What it decides".
    pub prose: String,
}

/// Identity of a listener row that survives line moves: event, owner, file, and its rank
/// among the rows sharing those three.
pub type ListenerKey = (String, String, String, usize);

pub fn listener_keys(rows: &[ListenerRow]) -> Vec<ListenerKey> {
    let file_line = |site: &str| {
        let site = site.trim_matches('`');
        match site.rsplit_once(':') {
            Some((file, line)) => (file.to_owned(), line.parse::<u64>().unwrap_or(0)),
            None => (site.to_owned(), 0),
        }
    };
    let mut ranks: BTreeMap<(String, String, String), Vec<(u64, usize)>> = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let (file, line) = file_line(&row.site);
        ranks
            .entry((row.event.clone(), row.owner.clone(), file))
            .or_default()
            .push((line, index));
    }
    let mut keys = vec![(String::new(), String::new(), String::new(), 0); rows.len()];
    for ((event, owner, file), mut lines) in ranks {
        lines.sort();
        for (rank, (_, index)) in lines.into_iter().enumerate() {
            keys[index] = (event.clone(), owner.clone(), file.clone(), rank);
        }
    }
    keys
}

const POINTS: &str = "points";
const LISTENERS: &str = "listeners";
const POINTS_HEADER: &str = "| extension point | mode | Rust type | payload | fires at | what it is for |\n|---|---|---|---|---|---|\n";
const LISTENERS_HEADER: &str = "| extension point | owner | scope | registered at | what it decides |\n|---|---|---|---|---|\n";

fn begin(region: &str) -> String {
    format!("<!-- generated:{region} begin -->\n")
}
fn end(region: &str) -> String {
    format!("<!-- generated:{region} end -->\n")
}

/// Byte range of the region's contents (between its marker lines).
fn region(doc: &str, name: &str) -> Result<std::ops::Range<usize>, String> {
    let (b, e) = (begin(name), end(name));
    let start = doc
        .find(&b)
        .ok_or_else(|| format!("the marker line `{}` is missing", b.trim()))?
        + b.len();
    let stop = doc[start..]
        .find(&e)
        .ok_or_else(|| format!("the marker line `{}` is missing", e.trim()))?
        + start;
    Ok(start..stop)
}

/// The rows of a document.
#[derive(Debug, Default)]
pub struct Parsed {
    pub points: Vec<PointRow>,
    pub listeners: Vec<ListenerRow>,
}

pub fn parse(doc: &str) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut krate = String::new();
    for line in doc[region(doc, POINTS)?].lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            krate = heading.trim().to_owned();
        } else if let Some(cells) = row_cells(line) {
            let [name, mode, rust, payload, fires, prose] = cells.as_slice() else {
                return Err(format!("an extension-point row needs 6 cells: {line}"));
            };
            parsed.points.push(PointRow {
                krate: krate.clone(),
                name: name.clone(),
                mode: mode.clone(),
                rust: rust.clone(),
                payload: payload.clone(),
                fires: fires.clone(),
                prose: prose.clone(),
            });
        }
    }
    for line in doc[region(doc, LISTENERS)?].lines() {
        if let Some(cells) = row_cells(line) {
            let [event, owner, scope, site, prose] = cells.as_slice() else {
                return Err(format!("a listener row needs 5 cells: {line}"));
            };
            parsed.listeners.push(ListenerRow {
                event: event.clone(),
                owner: owner.clone(),
                scope: scope.clone(),
                site: site.clone(),
                prose: prose.clone(),
            });
        }
    }
    Ok(parsed)
}

/// The cells of a table body row; `None` for other lines, header and separator rows.
fn row_cells(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let inner = line.strip_prefix('|')?.strip_suffix('|')?;
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push_str("\\|");
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            _ => cell.push(c),
        }
    }
    cells.push(cell.trim().to_owned());
    let header = cells.first().is_some_and(|c| c == "extension point");
    let separator = cells
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|c| c == '-' || c == ':'));
    (!header && !separator).then_some(cells)
}

pub fn render_point(row: &PointRow) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {} |\n",
        row.name, row.mode, row.rust, row.payload, row.fires, row.prose
    )
}

pub fn render_listener(row: &ListenerRow) -> String {
    format!(
        "| {} | {} | {} | {} | {} |\n",
        row.event, row.owner, row.scope, row.site, row.prose
    )
}

/// `doc` with both regions rewritten from the rows (whose prose is already merged).
pub fn rewrite(
    doc: &str,
    points: &[PointRow],
    listeners: &[ListenerRow],
) -> Result<String, String> {
    let mut body = String::new();
    let mut krate: Option<&str> = None;
    for row in points {
        if krate != Some(row.krate.as_str()) {
            if krate.is_some() {
                body.push('\n');
            }
            body.push_str(&format!("### {}\n\n{POINTS_HEADER}", row.krate));
            krate = Some(&row.krate);
        }
        body.push_str(&render_point(row));
    }
    let mut out = replace_region(doc, POINTS, &body)?;
    let mut body = LISTENERS_HEADER.to_owned();
    for row in listeners {
        body.push_str(&render_listener(row));
    }
    out = replace_region(&out, LISTENERS, &body)?;
    Ok(out)
}

fn replace_region(doc: &str, name: &str, body: &str) -> Result<String, String> {
    let range = region(doc, name)?;
    Ok(format!(
        "{}{}{}",
        &doc[..range.start],
        body,
        &doc[range.end..]
    ))
}

/// A prose cell still to be written.
pub fn unwritten(prose: &str) -> bool {
    prose.is_empty() || prose.starts_with(TODO)
}
