//! The shared tier: a Redis server that several machines' repositories
//! read through to (`remote_storage`). It owns the connection, the value
//! format on the server, the time-outs and what happens when the server
//! misbehaves; `tiered` puts it behind the local store.
//!
//! A value is `RPCCZST1` followed by a zstd frame of the entry exactly as
//! the local store encodes it (key, kind, blake3 checksum, body), so a
//! remote entry is verified on read as a local one is; one that fails is a
//! miss. Keys are `repocc:v<FORMAT_VERSION>:<hex digest>`.
//!
//! Faults cost speed, never a build: connecting and every request are
//! bounded by time-outs; the first failure prints one warning line; a
//! failed connect, a timed-out request or a second failed request turns
//! the remote off for the rest of the invocation. Writes go to a
//! background thread (its own connection), so compiling goes on while they
//! travel; the invocation waits for them at its end, at most four request
//! time-outs and a connect time-out.
//!
//! A request ends within its time-out, whatever the server sends, and a
//! reply larger than a request can need (a value larger than the largest
//! entry, more values than keys asked for) is refused before it is read
//! (see `resp`): a hostile or broken server costs a compile at most its
//! time-outs and a bounded amount of memory.
//!
//! Trust: whoever can write the Redis instance can put code into the
//! programs built from it (the checksum catches accidents, not intent).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::resp::{self, Reply};
use super::storage::{Entry, EntryKind, FragmentDigest};
use super::store::{self, FORMAT_VERSION};

const VALUE_MAGIC: &[u8; 8] = b"RPCCZST1";
/// zstd level: fast to write (entries are written once per new fragment).
const ZSTD_LEVEL: i32 = 3;
/// Largest entry accepted from the server, decompressed.
const MAX_ENTRY_BYTES: u64 = store::MAX_ENTRY_BYTES;
/// Largest value accepted from the server: an entry of the largest size,
/// compressed (zstd adds a little to what it cannot compress), with its
/// magic.
const MAX_VALUE_BYTES: u64 = MAX_ENTRY_BYTES + MAX_ENTRY_BYTES / 128 + 4096;
/// Keys per MGET, and values per pipelined write.
const BATCH: usize = 512;

/// What the configuration says about the remote.
#[derive(Clone, Debug)]
pub struct RemoteSettings {
    /// `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, or
    /// `redis+unix:///PATH[?db=N&pass=PASSWORD]`.
    pub url: String,
    pub read_only: bool,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

/// Counters of one invocation's use of the remote.
#[derive(Debug, Default)]
pub struct RemoteStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub errors: AtomicU64,
    /// Entries the server held that failed verification (misses too).
    pub corrupt: AtomicU64,
    pub round_trips: AtomicU64,
    /// Compressed bytes received and sent.
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    /// The same entries, uncompressed.
    pub raw_bytes_read: AtomicU64,
    pub raw_bytes_written: AtomicU64,
    /// Time compiles spent waiting on the remote (reads, and the final
    /// wait for writes), microseconds.
    pub wait_us: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A remote that answers, or the reason it is off.
pub struct Remote {
    server: Server,
    /// The URL without its password, for messages.
    label: String,
    connection: Mutex<Option<resp::Connection>>,
    /// Off for the rest of the invocation.
    off: AtomicBool,
    failures: AtomicU32,
    warned: AtomicBool,
    pub stats: RemoteStats,
    writer: Mutex<Option<Writer>>,
}

struct Writer {
    queue: mpsc::Sender<Vec<(FragmentDigest, Entry)>>,
    done: mpsc::Receiver<WriterOutcome>,
}

/// The server's key of an entry.
pub fn remote_key(key: &FragmentDigest) -> String {
    format!("repocc:v{FORMAT_VERSION}:{}", key.to_hex())
}

/// An error on one line: a time-out says so; the server's own text is
/// cut short (`resp` cuts what it quotes).
fn describe(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::TimedOut {
        return "timed out".into();
    }
    let text: String = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

/// `url` without the password (user info and `pass=` query parameters).
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = match rest.split_once('@') {
        Some((_, host)) if !rest.starts_with('/') => format!("***@{host}"),
        _ => rest.to_string(),
    };
    let rest = match rest.split_once('?') {
        Some((path, query)) => {
            let q: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some(("pass" | "password", _)) => {
                        format!("{}=***", kv.split('=').next().unwrap_or(""))
                    }
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", q.join("&"))
        }
        None => rest,
    };
    if scheme.is_empty() {
        rest
    } else {
        format!("{scheme}://{rest}")
    }
}

/// Whether `url` names a remote repocc can use (the configuration's check).
pub fn check_url(url: &str) -> Result<(), String> {
    open_client(url).map(|_| ())
}

/// The client of a URL repocc can use (nothing is connected yet).
fn open_client(url: &str) -> Result<redis::Client, String> {
    let supported = ["redis://", "redis+unix://", "unix://"];
    if !supported.iter().any(|s| url.starts_with(s)) {
        return Err(format!(
            "{:?} is not a Redis URL (redis://HOST:PORT[/DB] or redis+unix:///PATH)",
            redact(url)
        ));
    }
    redis::Client::open(url)
        .map_err(|e| format!("{:?} is not a usable Redis URL: {e}", redact(url)))
}

/// The stored value of an entry: magic and a zstd frame of its encoding.
pub fn encode_value(key: &FragmentDigest, entry: &Entry) -> (Vec<u8>, u64) {
    let raw = store::encode(key, entry);
    let mut out = VALUE_MAGIC.to_vec();
    match zstd::bulk::compress(&raw, ZSTD_LEVEL) {
        Ok(z) => out.extend_from_slice(&z),
        Err(_) => return (Vec::new(), 0),
    }
    (out, raw.len() as u64)
}

/// The entry in a stored value, verified against `key`; `None` for
/// anything else (garbage, another format, a damaged frame, a wrong key).
pub fn decode_value(key: &FragmentDigest, value: &[u8]) -> Option<(Entry, u64)> {
    let frame = value.strip_prefix(VALUE_MAGIC)?;
    let raw = super::decompress_bounded(frame, MAX_ENTRY_BYTES)?;
    let entry = store::decode(key, &raw).ok()?;
    Some((entry, raw.len() as u64))
}

impl Remote {
    /// The remote of `settings`; `Err` when the URL cannot be used.
    pub fn new(settings: RemoteSettings) -> Result<Remote, String> {
        let client = open_client(&settings.url)?;
        Ok(Remote {
            label: redact(&settings.url),
            server: Server { client, settings },
            connection: Mutex::new(None),
            off: AtomicBool::new(false),
            failures: AtomicU32::new(0),
            warned: AtomicBool::new(false),
            stats: RemoteStats::default(),
            writer: Mutex::new(None),
        })
    }

    /// Whether the remote is still in use in this invocation.
    pub fn is_on(&self) -> bool {
        !self.off.load(Ordering::Relaxed)
    }

    /// Records a failure: one warning per invocation; off after a failed
    /// connect, a time-out (waiting again would cost as much) or the
    /// second failure.
    fn failed(&self, what: &str, e: &std::io::Error, connecting: bool) {
        add(&self.stats.errors, 1);
        let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if connecting || e.kind() == std::io::ErrorKind::TimedOut || n >= 2 {
            self.off.store(true, Ordering::Relaxed);
        }
        self.warn(&format!("{what}: {}", describe(e)));
    }

    /// The invocation's one warning line about the remote.
    fn warn(&self, what: &str) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            say!(
                "repocc: warning: remote storage {}: {what}; going on without it",
                self.label
            );
        }
    }

    /// Runs `request` on the shared connection (connecting first if
    /// needed). `None` when the remote is off or the request failed.
    fn with_connection<T>(
        &self,
        what: &str,
        request: impl FnOnce(&mut resp::Connection) -> std::io::Result<T>,
    ) -> Option<T> {
        if self.off.load(Ordering::Relaxed) {
            return None;
        }
        let start = Instant::now();
        let mut slot = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let result = (|| {
            if slot.is_none() {
                match self.server.connect() {
                    Ok(c) => *slot = Some(c),
                    Err(e) => {
                        self.failed("cannot connect", &e, true);
                        return None;
                    }
                }
            }
            let con = slot.as_mut()?;
            add(&self.stats.round_trips, 1);
            match request(con) {
                Ok(v) => Some(v),
                Err(e) => {
                    // A broken or timed-out connection is not reused.
                    *slot = None;
                    self.failed(what, &e, false);
                    None
                }
            }
        })();
        add(&self.stats.wait_us, start.elapsed().as_micros() as u64);
        result
    }

    /// The verified entries under `keys`, in order (`None`: a miss, an
    /// error, or an entry that failed verification). One round trip per
    /// [`BATCH`] keys.
    pub fn get_many(&self, keys: &[FragmentDigest]) -> Vec<Option<Entry>> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(BATCH) {
            let names: Vec<String> = chunk.iter().map(remote_key).collect();
            let values: Option<Vec<Option<Vec<u8>>>> = self.with_connection("reading", |c| {
                let mut args: Vec<&[u8]> = vec![if names.len() == 1 { b"GET" } else { b"MGET" }];
                args.extend(names.iter().map(|n| n.as_bytes()));
                let limits = resp::Limits {
                    bulk: MAX_VALUE_BYTES,
                    array: names.len() as u64,
                    total: 2 * MAX_VALUE_BYTES,
                };
                let reply = c.request(&resp::command(&args), 1, limits)?.pop();
                let value = |r: Reply| match r {
                    Reply::Bulk(v) => Ok(Some(v)),
                    Reply::Nil => Ok(None),
                    Reply::Error(e) => Err(std::io::Error::other(e)),
                    other => Err(std::io::Error::other(format!("unexpected reply {other:?}"))),
                };
                match reply {
                    Some(Reply::Array(items)) if names.len() > 1 => {
                        items.into_iter().map(value).collect()
                    }
                    Some(r) if names.len() == 1 => value(r).map(|v| vec![v]),
                    other => Err(std::io::Error::other(format!("unexpected reply {other:?}"))),
                }
            });
            match values {
                Some(values) if values.len() == chunk.len() => {
                    for (key, value) in chunk.iter().zip(values) {
                        out.push(self.verify(key, value));
                    }
                }
                Some(_) => {
                    add(&self.stats.errors, 1);
                    out.extend(chunk.iter().map(|_| None));
                }
                None => out.extend(chunk.iter().map(|_| None)),
            }
        }
        out
    }

    fn verify(&self, key: &FragmentDigest, value: Option<Vec<u8>>) -> Option<Entry> {
        let Some(value) = value else {
            add(&self.stats.misses, 1);
            return None;
        };
        add(&self.stats.bytes_read, value.len() as u64);
        match decode_value(key, &value) {
            Some((entry, raw)) => {
                add(&self.stats.hits, 1);
                add(&self.stats.raw_bytes_read, raw);
                Some(entry)
            }
            None => {
                add(&self.stats.misses, 1);
                add(&self.stats.corrupt, 1);
                None
            }
        }
    }

    /// Queues `batch` for the server (nothing in read-only mode or when
    /// the remote is off). The explanations' history stays local.
    /// Encoding and compressing happen on the writer's thread too.
    pub fn queue(&self, mut batch: Vec<(FragmentDigest, Entry)>) {
        if self.server.settings.read_only || self.off.load(Ordering::Relaxed) {
            return;
        }
        batch.retain(|(_, e)| e.kind != EntryKind::History);
        if batch.is_empty() {
            return;
        }
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if writer.is_none() {
            *writer = self.start_writer();
        }
        if let Some(w) = writer.as_ref() {
            let _ = w.queue.send(batch);
        }
    }

    /// The background writer: its own connection, one pipelined round
    /// trip per [`BATCH`] values.
    fn start_writer(&self) -> Option<Writer> {
        let (queue, inbox) = mpsc::channel::<Vec<(FragmentDigest, Entry)>>();
        let (finished, done) = mpsc::channel();
        let server = self.server.clone();
        std::thread::Builder::new()
            .name("repocc-remote-writer".into())
            .spawn(move || {
                let mut outcome = WriterOutcome::default();
                let mut con: Option<resp::Connection> = None;
                for batch in inbox {
                    if outcome.error.is_some() {
                        continue;
                    }
                    if con.is_none() {
                        match server.connect() {
                            Ok(c) => con = Some(c),
                            Err(e) => {
                                outcome.error = Some(("cannot connect", e));
                                continue;
                            }
                        }
                    }
                    let c = con.as_mut().expect("connected above");
                    for chunk in batch.chunks(BATCH) {
                        let mut commands = Vec::new();
                        let mut count = 0;
                        let (mut bytes, mut raw_bytes) = (0, 0);
                        for (key, entry) in chunk {
                            let (value, raw) = encode_value(key, entry);
                            if value.is_empty() {
                                continue;
                            }
                            bytes += value.len() as u64;
                            raw_bytes += raw;
                            let name = remote_key(key);
                            let mut args: Vec<&[u8]> = vec![b"SET", name.as_bytes(), &value];
                            // A deletion never replaces a value (as in the
                            // local index, see `store::write_pack`).
                            if entry.kind == EntryKind::Deleted {
                                args.push(b"NX");
                            }
                            commands.extend(resp::command(&args));
                            count += 1;
                        }
                        outcome.round_trips += 1;
                        // One short status line per value.
                        let limits = resp::Limits {
                            bulk: 0,
                            array: 0,
                            total: 4096 * (count as u64 + 1),
                        };
                        let result = c.request(&commands, count, limits).and_then(|replies| {
                            // `SET ... NX` that set nothing replies nil.
                            let written = |r: &Reply| matches!(r, Reply::Status(_) | Reply::Nil);
                            match replies.into_iter().find(|r| !written(r)) {
                                None => Ok(()),
                                Some(Reply::Error(e)) => Err(std::io::Error::other(e)),
                                Some(other) => Err(std::io::Error::other(format!(
                                    "unexpected reply {other:?}"
                                ))),
                            }
                        });
                        match result {
                            Ok(()) => {
                                outcome.bytes += bytes;
                                outcome.raw_bytes += raw_bytes;
                            }
                            Err(e) => {
                                outcome.error = Some(("writing", e));
                                break;
                            }
                        }
                    }
                }
                let _ = finished.send(outcome);
            })
            .ok()?;
        Some(Writer { queue, done })
    }

    /// Waits for the queued writes, at most the request time-out per
    /// batch still queued (bounded), and folds their outcome into the
    /// statistics. Called once, when the invocation's compiles are done.
    pub fn finish(&self) {
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(Writer { queue, done }) = writer else {
            return;
        };
        drop(queue);
        let start = Instant::now();
        let deadline =
            self.server.settings.request_timeout * 4 + self.server.settings.connect_timeout;
        match done.recv_timeout(deadline) {
            Ok(o) => {
                add(&self.stats.round_trips, o.round_trips);
                add(&self.stats.bytes_written, o.bytes);
                add(&self.stats.raw_bytes_written, o.raw_bytes);
                if let Some((what, e)) = o.error {
                    self.failed(what, &e, true);
                }
            }
            Err(_) => {
                add(&self.stats.errors, 1);
                self.warn(&format!("writing took longer than {deadline:?}"));
            }
        }
        add(&self.stats.wait_us, start.elapsed().as_micros() as u64);
    }
}

/// The server: how to reach it.
#[derive(Clone)]
struct Server {
    client: redis::Client,
    settings: RemoteSettings,
}

impl Server {
    fn connect(&self) -> std::io::Result<resp::Connection> {
        resp::Connection::open(
            self.client.get_connection_info(),
            self.settings.connect_timeout,
            self.settings.request_timeout,
        )
    }
}

#[derive(Default)]
struct WriterOutcome {
    round_trips: u64,
    /// Written, compressed and as entries.
    bytes: u64,
    raw_bytes: u64,
    error: Option<(&'static str, std::io::Error)>,
}

impl RemoteStats {
    /// The counters, as the statistics name them.
    pub fn counters(&self) -> super::stats::Counters {
        use super::stats::key;
        let mut c = super::stats::Counters::default();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (k, v) in [
            (key::REMOTE_HITS, get(&self.hits)),
            (key::REMOTE_MISSES, get(&self.misses)),
            (key::REMOTE_ERRORS, get(&self.errors)),
            (key::REMOTE_CORRUPT, get(&self.corrupt)),
            (key::REMOTE_ROUND_TRIPS, get(&self.round_trips)),
            (key::REMOTE_BYTES_READ, get(&self.bytes_read)),
            (key::REMOTE_BYTES_WRITTEN, get(&self.bytes_written)),
            (key::REMOTE_RAW_BYTES_READ, get(&self.raw_bytes_read)),
            (key::REMOTE_RAW_BYTES_WRITTEN, get(&self.raw_bytes_written)),
            (key::REMOTE_WAIT_MS, get(&self.wait_us) / 1000),
        ] {
            if v > 0 {
                c.add(k, v);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            kind: EntryKind::Object,
            metadata: b"{}".to_vec(),
            payload: vec![7; 4096],
        }
    }

    #[test]
    fn values_round_trip_and_damage_is_a_miss() {
        let key = FragmentDigest([3; 32]);
        let (value, raw) = encode_value(&key, &entry());
        assert!(value.len() < raw as usize, "compressed");
        assert_eq!(decode_value(&key, &value).map(|(e, _)| e), Some(entry()));
        // Another key's value, garbage, a damaged frame.
        assert!(decode_value(&FragmentDigest([4; 32]), &value).is_none());
        assert!(decode_value(&key, b"hello").is_none());
        let mut damaged = value.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        assert!(decode_value(&key, &damaged).is_none());
        // A well-formed frame of a tampered entry fails its checksum.
        let mut tampered = store::encode(&key, &entry());
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        let mut forged = VALUE_MAGIC.to_vec();
        forged.extend(zstd::bulk::compress(&tampered, 1).unwrap());
        assert!(decode_value(&key, &forged).is_none());
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redact("redis://:secret@host:6379/2"),
            "redis://***@host:6379/2"
        );
        assert_eq!(redact("redis://host:6379"), "redis://host:6379");
        assert_eq!(
            redact("redis+unix:///run/redis.sock?db=1&pass=secret"),
            "redis+unix:///run/redis.sock?db=1&pass=***"
        );
        assert!(check_url("redis://127.0.0.1:1/0").is_ok());
        assert!(check_url("http://example.com").is_err());
        assert!(check_url("rediss://host").is_err());
    }

    #[test]
    fn a_server_that_is_not_there_turns_the_remote_off() {
        // A loopback port nothing listens on (bound, then released).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let remote = Remote::new(RemoteSettings {
            url: format!("redis://127.0.0.1:{port}"),
            read_only: false,
            connect_timeout: Duration::from_millis(200),
            request_timeout: Duration::from_millis(200),
        })
        .unwrap();
        let keys = [FragmentDigest([1; 32]), FragmentDigest([2; 32])];
        assert_eq!(remote.get_many(&keys), vec![None, None]);
        assert!(!remote.is_on());
        // Off: nothing more is tried, nothing is queued.
        assert_eq!(remote.get_many(&keys), vec![None, None]);
        remote.queue(vec![(keys[0], entry())]);
        remote.finish();
        assert_eq!(remote.stats.errors.load(Ordering::Relaxed), 1);
        assert_eq!(remote.stats.round_trips.load(Ordering::Relaxed), 0);
    }
}
