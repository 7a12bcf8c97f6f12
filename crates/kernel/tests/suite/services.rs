//! Type-keyed services.

use std::sync::Arc;

use dsh_kernel::Context;

trait Greeter: Send + Sync {
    fn greet(&self) -> String;
}
struct English;
impl Greeter for English {
    fn greet(&self) -> String {
        "hello".into()
    }
}

#[derive(Debug, PartialEq)]
struct Config(u32);

#[test]
fn provide_get_require_and_removal_with_fiber() {
    let root = Context::root();
    assert!(root.get::<Config>().is_none());
    let err = root.require::<Config>().unwrap_err();
    assert_eq!(err.code(), "SERVICE_MISSING");
    assert!(err.to_string().contains("Config"), "{err}");

    let plugin = root.child("p").unwrap();
    plugin.provide(Arc::new(Config(7))).unwrap().forget();
    assert_eq!(*root.require::<Config>().unwrap(), Config(7));
    let other = root.child("q").unwrap();
    assert_eq!(
        other.provide(Arc::new(Config(8))).unwrap_err().code(),
        "SERVICE_CONFLICT"
    );
    plugin.fiber().dispose();
    assert!(root.get::<Config>().is_none());
    other.provide(Arc::new(Config(8))).unwrap().forget();
    assert_eq!(*root.require::<Config>().unwrap(), Config(8));
}

#[test]
fn unsized_trait_object_services() {
    let root = Context::root();
    let g: Arc<dyn Greeter> = Arc::new(English);
    root.provide::<dyn Greeter>(g).unwrap().forget();
    assert_eq!(root.require::<dyn Greeter>().unwrap().greet(), "hello");
    assert!(root.get::<English>().is_none());
}

#[test]
fn stale_disposer_does_not_remove_a_newer_provider() {
    let root = Context::root();
    let first = root.provide(Arc::new(Config(1))).unwrap();
    first.dispose();
    root.provide(Arc::new(Config(2))).unwrap().forget();
    first.dispose();
    assert_eq!(*root.require::<Config>().unwrap(), Config(2));
}
