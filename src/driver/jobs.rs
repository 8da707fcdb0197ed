//! Parallelism within one invocation under GNU make's jobserver: every
//! process owns one implicit token; each further unit compiled at once
//! takes a token from the jobserver (the `jobserver` crate), so `make -jN`
//! with many-source invocations does not oversubscribe the machine.

use std::sync::atomic::{AtomicBool, Ordering};

pub struct Tokens {
    client: Option<jobserver::Client>,
    implicit_free: AtomicBool,
}

/// A held token; released on drop.
pub enum Token<'a> {
    Implicit(&'a AtomicBool),
    Acquired(#[allow(dead_code)] jobserver::Acquired),
    Unlimited,
}

impl Drop for Token<'_> {
    fn drop(&mut self) {
        if let Token::Implicit(flag) = self {
            flag.store(true, Ordering::Release);
        }
    }
}

impl Tokens {
    pub fn from_env() -> Tokens {
        // SAFETY: called once per process, before any other code could have
        // closed or reused the jobserver's file descriptors.
        let client = unsafe { jobserver::Client::from_env() };
        Tokens {
            client,
            implicit_free: AtomicBool::new(true),
        }
    }

    #[cfg(test)]
    pub fn with_client(client: Option<jobserver::Client>) -> Tokens {
        Tokens {
            client,
            implicit_free: AtomicBool::new(true),
        }
    }

    /// Blocks until this thread may run a unit.
    pub fn acquire(&self) -> Token<'_> {
        if self
            .implicit_free
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Token::Implicit(&self.implicit_free);
        }
        match &self.client {
            Some(c) => match c.acquire() {
                Ok(a) => Token::Acquired(a),
                Err(_) => Token::Unlimited,
            },
            None => Token::Unlimited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn never_more_units_than_tokens() {
        // A jobserver with 1 extra token: at most 2 units at once.
        let client = jobserver::Client::new(1).unwrap();
        let tokens = Tokens::with_client(Some(client));
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    let _t = tokens.acquire();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }
}
