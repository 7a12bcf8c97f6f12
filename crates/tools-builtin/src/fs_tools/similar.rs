//! Finding what the model probably meant when an edit's `old_string` is not in the file.
//!
//! Windows of the file with as many lines as `old_string` are scored line by line with the
//! Sørensen–Dice coefficient over character bigrams (cheap, and robust to small typos and
//! indentation drift); the best few non-overlapping windows become the candidates.

use crate::error::EditCandidate;

/// Windows scoring below this are not worth showing.
const MIN_SCORE: f64 = 0.5;
/// How many candidates an error lists.
const MAX_CANDIDATES: usize = 3;
/// Caps the work on huge files: beyond this many line comparisons only the first line of
/// `old_string` is matched.
const MAX_COMPARISONS: usize = 2_000_000;
/// Characters of a candidate shown in the error.
const MAX_CANDIDATE_CHARS: usize = 2_000;

/// The regions of `text` most similar to `needle`, best first.
pub(crate) fn nearest_candidates(text: &str, needle: &str) -> Vec<EditCandidate> {
    let lines: Vec<&str> = text.lines().collect();
    let mut needle_lines: Vec<&str> = needle.lines().collect();
    if needle_lines.is_empty() || lines.is_empty() {
        return Vec::new();
    }
    if lines.len().saturating_mul(needle_lines.len()) > MAX_COMPARISONS {
        needle_lines.truncate(1);
    }
    let width = needle_lines.len().min(lines.len());
    let needle_grams: Vec<Vec<(char, char)>> = needle_lines.iter().map(|l| bigrams(l)).collect();
    let mut scored: Vec<(f64, usize)> = (0..=lines.len() - width)
        .map(|start| {
            let total: f64 = (0..width)
                .map(|k| dice(&bigrams(lines[start + k]), &needle_grams[k]))
                .sum();
            (total / width as f64, start)
        })
        .filter(|(score, _)| *score >= MIN_SCORE)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut picked: Vec<usize> = Vec::new();
    for (_, start) in scored {
        if picked
            .iter()
            .all(|&p| start + width <= p || p + width <= start)
        {
            picked.push(start);
            if picked.len() == MAX_CANDIDATES {
                break;
            }
        }
    }
    picked
        .into_iter()
        .map(|start| {
            let joined = lines[start..start + width].join("\n");
            let (shown, cut) = crate::output::truncate_chars(&joined, MAX_CANDIDATE_CHARS);
            EditCandidate {
                first_line: start + 1,
                last_line: start + width,
                text: if cut {
                    format!("{shown}…")
                } else {
                    joined.clone()
                },
            }
        })
        .collect()
}

/// Whether `needle` occurs in `text` once runs of whitespace are treated as equal.
pub(crate) fn matches_ignoring_whitespace(text: &str, needle: &str) -> bool {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let needle = squash(needle);
    !needle.is_empty() && squash(text).contains(&needle)
}

/// Sorted character bigrams of a line, ignoring leading and trailing whitespace.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    grams.sort_unstable();
    grams
}

/// Dice coefficient of two sorted bigram multisets; two blank lines are identical.
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_typo_line_first() {
        let text = "fn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n";
        let found = nearest_candidates(text, "let totl = compute(1, 2);");
        assert_eq!(
            found.first(),
            Some(&EditCandidate {
                first_line: 2,
                last_line: 2,
                text: "    let total = compute(1, 2);".into()
            })
        );
    }

    #[test]
    fn multi_line_windows_and_no_overlap() {
        let text = "a = 1\nb = 2\nc = 3\nd = 4\n";
        let found = nearest_candidates(text, "b = 2\nc = 33");
        assert_eq!(
            found[0],
            EditCandidate {
                first_line: 2,
                last_line: 3,
                text: "b = 2\nc = 3".into()
            }
        );
        assert!(found
            .iter()
            .skip(1)
            .all(|c| c.last_line < 2 || c.first_line > 3));
    }

    #[test]
    fn unrelated_text_has_no_candidates() {
        assert_eq!(nearest_candidates("alpha\nbeta\n", "zzzz qqqq"), Vec::new());
    }

    #[test]
    fn whitespace_insensitive_match() {
        assert!(matches_ignoring_whitespace(
            "if x {\n\treturn 1;\n}",
            "if x {\n    return 1;\n}"
        ));
        assert!(!matches_ignoring_whitespace("if x {}", "if y {}"));
    }
}
