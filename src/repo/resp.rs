//! A bounded connection to a Redis server (RESP2), for the shared tier
//! (`remote`). The redis crate parses the URL; the bytes on the wire are
//! read here, because the crate reads a whole reply whatever it announces
//! and bounds each `read()`, not the request: a server that sends a valid
//! reply one byte a second held a compile for minutes, and one that
//! announced a 4 GiB value or a 4-billion-entry array took gigabytes, or
//! aborted the process on a failed allocation.
//!
//! Here a request (its commands written, every reply read) ends by one
//! deadline, whatever the server sends, and a reply that announces more
//! than the request can need (a value larger than the largest entry, more
//! values than keys asked for, more bytes in all than [`Limits::total`])
//! is refused before anything is read or allocated for it.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A reply, as much of RESP2 as repocc's commands get.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Nil,
    Bulk(Vec<u8>),
    Status(String),
    Int(i64),
    Error(String),
    Array(Vec<Reply>),
}

/// What a request's replies may hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes of one value.
    pub bulk: u64,
    /// Entries of one array.
    pub array: u64,
    /// Bytes read for the whole request.
    pub total: u64,
}

/// The longest status, error or length line accepted.
const MAX_LINE: usize = 4096;
/// Arrays inside arrays: MGET's reply is one level deep.
const MAX_DEPTH: usize = 2;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_timeouts(&self, d: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(d))?;
                s.set_write_timeout(Some(d))
            }
            Stream::Unix(s) => {
                s.set_read_timeout(Some(d))?;
                s.set_write_timeout(Some(d))
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "timed out")
}

/// The bytes of one command (an array of bulk strings).
pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// One connection; a request that fails leaves it unusable (the caller
/// drops it).
pub struct Connection {
    stream: Stream,
    /// Read but not yet parsed: `buf[at..]`.
    buf: Vec<u8>,
    at: usize,
    timeout: Duration,
}

/// The request in progress: its deadline and what it may still read.
struct Budget {
    deadline: Instant,
    left: u64,
}

impl Connection {
    /// Connects to the server `info` names (TCP or a Unix socket) within
    /// `connect_timeout`, and authenticates and selects its database
    /// within `timeout` each.
    pub fn open(
        info: &redis::ConnectionInfo,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> io::Result<Connection> {
        let stream = match info.addr() {
            redis::ConnectionAddr::Tcp(host, port) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                let mut found = None;
                for addr in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&addr, connect_timeout) {
                        Ok(s) => {
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                let s = found.ok_or(last)?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            redis::ConnectionAddr::Unix(path) => Stream::Unix(UnixStream::connect(path)?),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "TLS is not supported",
                ))
            }
        };
        let mut c = Connection {
            stream,
            buf: Vec::new(),
            at: 0,
            timeout,
        };
        let small = Limits {
            bulk: MAX_LINE as u64,
            array: 0,
            total: 64 * 1024,
        };
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = settings.username() {
                args.push(user.as_bytes());
            }
            args.push(password.as_bytes());
            c.expect_ok(&command(&args), small, "AUTH")?;
        }
        if settings.db() != 0 {
            let db = settings.db().to_string();
            c.expect_ok(&command(&[b"SELECT", db.as_bytes()]), small, "SELECT")?;
        }
        Ok(c)
    }

    fn expect_ok(&mut self, cmd: &[u8], limits: Limits, what: &str) -> io::Result<()> {
        match self.request(cmd, 1, limits)?.pop() {
            Some(Reply::Status(_)) => Ok(()),
            Some(Reply::Error(e)) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{what}: {e}"),
            )),
            other => Err(invalid(format!("{what}: unexpected reply {other:?}"))),
        }
    }

    /// Writes `commands` (the bytes of `replies` commands) and reads one
    /// reply for each, all within the connection's time-out and `limits`.
    pub fn request(
        &mut self,
        commands: &[u8],
        replies: usize,
        limits: Limits,
    ) -> io::Result<Vec<Reply>> {
        let mut budget = Budget {
            deadline: Instant::now() + self.timeout,
            left: limits.total,
        };
        let mut written = 0;
        while written < commands.len() {
            self.arm(&budget)?;
            match self.stream.write(&commands[written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(timeout_or(e)),
            }
        }
        let mut out = Vec::with_capacity(replies);
        for _ in 0..replies {
            out.push(self.reply(&mut budget, &limits, 0)?);
        }
        Ok(out)
    }

    /// Sets the socket's time-outs to what is left of the request.
    fn arm(&self, budget: &Budget) -> io::Result<()> {
        let left = budget.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        self.stream.set_timeouts(left)
    }

    /// Reads more bytes into the buffer (at least one), within the budget.
    fn fill(&mut self, budget: &mut Budget) -> io::Result<()> {
        if self.at > 0 && self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        }
        if budget.left == 0 {
            return Err(invalid(
                "the reply is larger than the request allows".into(),
            ));
        }
        let chunk = budget.left.min(64 * 1024) as usize;
        let start = self.buf.len();
        self.buf.resize(start + chunk, 0);
        loop {
            self.arm(budget)?;
            match self.stream.read(&mut self.buf[start..]) {
                Ok(0) => {
                    self.buf.truncate(start);
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                Ok(n) => {
                    self.buf.truncate(start + n);
                    budget.left -= n as u64;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(start);
                    return Err(timeout_or(e));
                }
            }
        }
    }

    /// One line, without its CRLF.
    fn line(&mut self, budget: &mut Budget) -> io::Result<String> {
        loop {
            let pending = &self.buf[self.at..];
            if let Some(end) = pending.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&pending[..end]).into_owned();
                self.at += end + 2;
                return Ok(line);
            }
            if pending.len() > MAX_LINE {
                return Err(invalid("a reply line longer than 4 KiB".into()));
            }
            self.fill(budget)?;
        }
    }

    /// Exactly `n` bytes and a CRLF.
    fn bytes(&mut self, n: usize, budget: &mut Budget) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.at == self.buf.len() {
                self.fill(budget)?;
            }
            let take = (n - out.len()).min(self.buf.len() - self.at);
            out.extend_from_slice(&self.buf[self.at..self.at + take]);
            self.at += take;
        }
        while self.buf.len() - self.at < 2 {
            self.fill(budget)?;
        }
        if &self.buf[self.at..self.at + 2] != b"\r\n" {
            return Err(invalid("a value without its CRLF".into()));
        }
        self.at += 2;
        Ok(out)
    }

    fn reply(&mut self, budget: &mut Budget, limits: &Limits, depth: usize) -> io::Result<Reply> {
        let line = self.line(budget)?;
        let (kind, rest) = line.split_at(line.len().min(1));
        let length = || -> io::Result<i64> {
            rest.parse::<i64>()
                .map_err(|_| invalid(format!("not a length: {:?}", cut(rest))))
        };
        match kind {
            "+" => Ok(Reply::Status(rest.to_string())),
            "-" => Ok(Reply::Error(cut(rest))),
            ":" => Ok(Reply::Int(length()?)),
            "$" => match length()? {
                -1 => Ok(Reply::Nil),
                n if n < 0 => Err(invalid(format!("a value of length {n}"))),
                n if n as u64 > limits.bulk || n as u64 > budget.left + self.pending() => {
                    Err(invalid(format!(
                        "a value of {n} bytes, more than this request allows"
                    )))
                }
                n => Ok(Reply::Bulk(self.bytes(n as usize, budget)?)),
            },
            "*" => match length()? {
                -1 => Ok(Reply::Nil),
                n if n < 0 => Err(invalid(format!("an array of length {n}"))),
                n if n as u64 > limits.array => Err(invalid(format!(
                    "an array of {n} values, more than the {} asked for",
                    limits.array
                ))),
                _ if depth >= MAX_DEPTH => Err(invalid("arrays nested too deep".into())),
                n => {
                    let mut items = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        items.push(self.reply(budget, limits, depth + 1)?);
                    }
                    Ok(Reply::Array(items))
                }
            },
            _ => Err(invalid(format!("not a reply: {:?}", cut(&line)))),
        }
    }

    /// Bytes read but not parsed.
    fn pending(&self) -> u64 {
        (self.buf.len() - self.at) as u64
    }
}

/// A socket time-out as a time-out (Unix sockets say `WouldBlock`).
fn timeout_or(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => timed_out(),
        _ => e,
    }
}

/// At most 160 characters of a server's text, on one line.
fn cut(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(160) {
        Some((at, _)) => format!("{}...", &one_line[..at]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server on a loopback port that answers the first request with
    /// `reply`, sent in pieces of `piece` bytes `pause` apart.
    fn server(reply: Vec<u8>, piece: usize, pause: Duration) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut b = [0u8; 4096];
            let _ = c.read(&mut b);
            for p in reply.chunks(piece.max(1)) {
                if c.write_all(p).is_err() {
                    return;
                }
                std::thread::sleep(pause);
            }
            std::thread::sleep(Duration::from_secs(5));
        });
        port
    }

    fn connect(port: u16, timeout_ms: u64) -> Connection {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        Connection::open(
            client.get_connection_info(),
            Duration::from_secs(1),
            Duration::from_millis(timeout_ms),
        )
        .unwrap()
    }

    const LIMITS: Limits = Limits {
        bulk: 1 << 20,
        array: 3,
        total: 4 << 20,
    };

    fn mget() -> Vec<u8> {
        command(&[b"MGET", b"a", b"b", b"c"])
    }

    #[test]
    fn replies_are_read_whole() {
        let reply = b"*3\r\n$5\r\nhello\r\n$-1\r\n$0\r\n\r\n+OK\r\n:42\r\n-ERR no\r\n".to_vec();
        let port = server(reply, 3, Duration::ZERO);
        let mut c = connect(port, 2000);
        let got = c.request(&mget(), 4, LIMITS).unwrap();
        assert_eq!(
            got,
            vec![
                Reply::Array(vec![
                    Reply::Bulk(b"hello".to_vec()),
                    Reply::Nil,
                    Reply::Bulk(Vec::new())
                ]),
                Reply::Status("OK".into()),
                Reply::Int(42),
                Reply::Error("ERR no".into()),
            ]
        );
    }

    #[test]
    fn a_slow_server_cannot_hold_a_request_past_its_time_out() {
        // A valid reply, one byte every 50 ms: each read succeeds.
        let port = server(
            b"*3\r\n$-1\r\n$-1\r\n$-1\r\n".to_vec(),
            1,
            Duration::from_millis(50),
        );
        let mut c = connect(port, 300);
        let start = Instant::now();
        let e = c.request(&mget(), 1, LIMITS).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn announced_sizes_are_refused_before_they_are_read() {
        for (reply, what) in [
            (&b"$4294967296\r\n"[..], "more than this request allows"),
            (b"*4294967295\r\n$-1\r\n", "more than the 3 asked for"),
            (b"*2\r\n*2\r\n*1\r\n$-1\r\n", "more than the 3"),
            (b"$-7\r\n", "length -7"),
            (b"%1\r\n", "not a reply"),
        ] {
            let mut bytes = reply.to_vec();
            bytes.extend(std::iter::repeat_n(0u8, 1 << 16));
            let port = server(bytes, 1 << 16, Duration::ZERO);
            let mut c = connect(port, 2000);
            let e = c.request(&mget(), 1, LIMITS).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
            let text = e.to_string();
            let ok = text.contains(what) || (what == "more than the 3" && text.contains("nested"));
            assert!(ok, "{text}");
        }
        // Bytes in all: three values each under the bulk limit, more than
        // the total together.
        let value = vec![b'x'; 1 << 19];
        let mut bytes = b"*3\r\n".to_vec();
        for _ in 0..3 {
            bytes.extend(format!("${}\r\n", value.len()).as_bytes());
            bytes.extend(&value);
            bytes.extend(b"\r\n");
        }
        let port = server(bytes, 1 << 16, Duration::ZERO);
        let mut c = connect(port, 2000);
        let small = Limits {
            total: 1 << 20,
            ..LIMITS
        };
        let e = c.request(&mget(), 1, small).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }
}
