//! Shared test helpers: a recording log and a few event types.

use std::sync::{Arc, Mutex};

use dsh_kernel::{BoxError, Event, Notification, Parallel, Serial, Waterfall};

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

pub fn err(msg: &str) -> BoxError {
    msg.to_string().into()
}

pub struct Ping;
impl Event for Ping {
    const NAME: &'static str = "test/ping";
}
impl Notification for Ping {
    type Payload = String;
}

pub struct Ask;
impl Event for Ask {
    const NAME: &'static str = "test/ask";
}
impl Serial for Ask {
    type Args = u32;
    type Output = String;
}

pub struct Flush;
impl Event for Flush {
    const NAME: &'static str = "test/flush";
}
impl Parallel for Flush {
    type Args = Log;
}

pub struct Wrap;
impl Event for Wrap {
    const NAME: &'static str = "test/wrap";
}
impl Waterfall for Wrap {
    type Args = Log;
    type Output = String;
}
