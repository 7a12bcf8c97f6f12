//! The scanner on small sources: what counts, and what must not.

use super::lexer::{mask, scan_file};

fn names(found: &[(String, String, u32)]) -> Vec<(&str, &str, u32)> {
    found
        .iter()
        .map(|(m, i, l)| (m.as_str(), i.as_str(), *l))
        .collect()
}

#[test]
fn comments_and_literals_never_count_and_lines_survive_masking() {
    let source = r##"
// ctx.emit::<InComment>(None, &x);
/* ctx.emit::<InBlock>(None, &x); /* nested */ still comment */
let s = "ctx.emit::<InString>(None, &x)"; let q = '"';
let r = r#"ctx.emit::<InRaw>("x")"#;
self.ctx
    .emit::<Real>(None, &x);
"##;
    let masked = mask(source);
    assert_eq!(masked.len(), source.len());
    assert_eq!(masked.lines().count(), source.lines().count());
    assert_eq!(names(&scan_file(source).dispatches), [("emit", "Real", 7)]);
}

#[test]
fn test_only_items_are_skipped_and_their_modules_not_followed() {
    let source = "
mod real;
#[cfg(test)]
mod tests;
#[cfg(test)]
#[allow(dead_code)]
mod inline {
    fn f(ctx: &Context) { ctx.on::<Hidden>(|_| Ok(())); }
}
fn g(ctx: &Context) { ctx.on_waterfall::<dsh_agent::PreStep, _, _>(f); }
";
    let found = scan_file(source);
    assert_eq!(found.modules, ["real"]);
    assert_eq!(
        names(&found.registrations),
        [("on_waterfall", "PreStep", 10)]
    );
}

#[test]
fn declarations_by_hand_and_by_macro_are_found() {
    let source = r#"
macro_rules! point {
    ($name:ident, $wire:literal) => {
        pub struct $name;
        impl Event for $name { const NAME: &'static str = $wire; }
        impl Notification for $name { type Payload = (); }
    };
}
point!(
    /// documented
    Made, "x/made"
);
impl dsh_kernel::Event for ByHand { const NAME: &'static str = "x/by-hand"; }
impl<T> Waterfall for ByHand { type Args = T; type Output = (); }
impl ByHand { fn emit(&self) {} }
fn forward<E: Notification>(ctx: &Context) { ctx.emit::<E>(None, &()); }
"#;
    let found = scan_file(source);
    assert_eq!(found.declaring_macros, ["point"]);
    assert!(found
        .macro_calls
        .iter()
        .any(|(m, ident, line)| m == "point" && ident == "Made" && *line == 9));
    assert_eq!(found.event_impls, [("ByHand".to_owned(), 13)]);
    assert_eq!(
        found.mode_impls,
        [("ByHand".to_owned(), "Waterfall".to_owned())]
    );
    // Generic forwarding names a type parameter, which matches no extension point.
    assert_eq!(names(&found.dispatches), [("emit", "E", 16)]);
}
