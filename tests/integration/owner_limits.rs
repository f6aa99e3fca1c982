//! The owner socket under a hostile or runaway client, in-process: it
//! serves at most `MAX_CONNECTIONS` at once (the next is refused with a
//! message, not given a thread), a connection that never sends its request
//! is closed, and a frame over `MAX_CLIENT_FRAME` is refused after that
//! many bytes instead of being buffered.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jarvis::app::owner::protocol::{read_frame, write_frame, ClientFrame, OwnerFrame, MAX_CLIENT_FRAME};
use jarvis::app::owner::server::{Handler, Owner, FIRST_FRAME_TIMEOUT, MAX_CONNECTIONS};
use jarvis::app::owner::{client, socket_path};
use jarvis::cancel::Cancel;
use jarvis::paths::JarvisHome;

use crate::support::Sandbox;

struct Running {
    _sandbox: Sandbox,
    home: JarvisHome,
    stop: Cancel,
    ran: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start() -> Running {
    let sandbox = Sandbox::new();
    let home = JarvisHome::at(sandbox.jarvis_home());
    let app = crate::support::web::open_app(home.clone());
    let owner = Owner::start(&home, "sync").expect("start the owner");
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = ran.clone();
    let handler: Handler = Arc::new(move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        0
    });
    let stop = Cancel::new();
    let s = stop.clone();
    let thread = std::thread::spawn(move || owner.run(app, handler, &s).expect("owner run"));
    Running {
        _sandbox: sandbox,
        home,
        stop,
        ran,
        thread: Some(thread),
    }
}

fn raw(r: &Running) -> (UnixStream, BufReader<UnixStream>) {
    let s = UnixStream::connect(socket_path(&r.home)).expect("connect");
    s.set_read_timeout(Some(FIRST_FRAME_TIMEOUT * 3)).expect("timeout");
    let reader = BufReader::new(s.try_clone().expect("clone"));
    (s, reader)
}

fn status_ok(r: &Running) -> bool {
    match client::connect(&r.home) {
        Ok(Some(mut c)) => {
            c.send(&ClientFrame::Status).expect("send");
            matches!(c.recv(), Ok(Some(OwnerFrame::Status { .. })))
        }
        _ => false,
    }
}

#[test]
fn the_owner_refuses_connections_past_its_limit_and_serves_again_after() {
    let r = start();
    assert!(status_ok(&r));
    let mut idle = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let (s, mut rd) = raw(&r);
        // Each is greeted (so each holds its slot) and then says nothing.
        assert!(matches!(
            read_frame::<OwnerFrame>(&mut rd),
            Ok(Some(OwnerFrame::Hello { .. }))
        ));
        idle.push((s, rd));
    }
    let refused = client::connect(&r.home)
        .err()
        .expect("connection past the limit accepted");
    let msg = refused.to_string();
    assert!(
        msg.contains(&format!("{MAX_CONNECTIONS} connections")) && msg.contains("try again"),
        "{msg}"
    );
    drop(idle);
    // The slots come back once those clients hang up.
    let back = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        status_ok(&r)
    });
    assert!(back, "the owner did not serve again after the idle clients left");
}

#[test]
fn a_connection_that_sends_nothing_is_closed() {
    let r = start();
    let (_s, mut rd) = raw(&r);
    assert!(matches!(
        read_frame::<OwnerFrame>(&mut rd),
        Ok(Some(OwnerFrame::Hello { .. }))
    ));
    // Nothing sent: the owner hangs up (end of stream), well within the
    // read timeout (3× its own).
    assert!(
        matches!(read_frame::<OwnerFrame>(&mut rd), Ok(None)),
        "an idle connection was held"
    );
}

#[test]
fn a_frame_over_the_limit_is_refused_not_buffered() {
    let r = start();
    let (s, mut rd) = raw(&r);
    assert!(matches!(
        read_frame::<OwnerFrame>(&mut rd),
        Ok(Some(OwnerFrame::Hello { .. }))
    ));
    // A `run` frame whose argument alone is twice the limit, sent from a
    // thread (the owner stops reading it, so the write may fail).
    let mut w = s.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        let huge = "a".repeat(2 * MAX_CLIENT_FRAME);
        write_frame(
            &mut w,
            &ClientFrame::Run {
                argv: vec!["kb".into(), "search".into(), huge],
                cwd: "/".into(),
                stdin_tty: false,
                stderr_tty: false,
                env: Vec::new(),
            },
        )
        .is_ok()
    });
    match read_frame::<OwnerFrame>(&mut rd) {
        Ok(Some(OwnerFrame::Err { text })) => assert!(text.contains("frame too long"), "{text}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(matches!(read_frame::<OwnerFrame>(&mut rd), Ok(None) | Err(_)));
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    assert_eq!(r.ran.load(Ordering::SeqCst), 0, "the oversized command ran");
    // A normal command still runs.
    let mut c = client::connect(&r.home).expect("connect").expect("owner");
    c.send(&ClientFrame::Run {
        argv: vec!["kb".into(), "stats".into()],
        cwd: "/".into(),
        stdin_tty: false,
        stderr_tty: false,
        env: Vec::new(),
    })
    .expect("send");
    loop {
        match c.recv().expect("recv") {
            Some(OwnerFrame::Exit { code }) => {
                assert_eq!(code, 0);
                break;
            }
            Some(_) => continue,
            None => panic!("no exit frame"),
        }
    }
    assert_eq!(r.ran.load(Ordering::SeqCst), 1);
}
