//! Placeholders, and real programs run without a shell: exit codes, the timeout, a missing
//! program, the stderr tail.

use super::*;

fn vars() -> HookVars {
    HookVars {
        name: "it's \"a\" $(touch x) `id`\nname".into(),
        category: String::new(),
        tags: String::new(),
        content_path: "/dl/it's/a b".into(),
        root_path: "/dl/it's/a b".into(),
        save_path: "/dl/it's".into(),
        file_count: 3,
        size: 123_456,
        tracker: "http://127.0.0.1:6969/announce".into(),
        info_hash_v1: "aa".repeat(20),
        info_hash_v2: String::new(),
        torrent_id: "aa".repeat(20),
    }
}

#[test]
fn every_placeholder_is_replaced() {
    let v = vars();
    let cases = [
        ("%N", v.name.clone()),
        ("%L", String::new()),
        ("%G", String::new()),
        ("%F", v.content_path.clone()),
        ("%R", v.root_path.clone()),
        ("%D", v.save_path.clone()),
        ("%C", "3".into()),
        ("%Z", "123456".into()),
        ("%T", v.tracker.clone()),
        ("%I", "aa".repeat(20)),
        ("%J", String::new()),
        ("%K", "aa".repeat(20)),
    ];
    for (arg, want) in cases {
        assert_eq!(expand(arg, &v), want, "{arg}");
    }
}

#[test]
fn placeholders_inside_text_percent_escapes_and_unknown_codes() {
    let v = HookVars {
        name: "ubuntu.iso".into(),
        size: 2048,
        ..HookVars::default()
    };
    assert_eq!(
        expand("name=%N (%Z bytes) 100%%", &v),
        "name=ubuntu.iso (2048 bytes) 100%"
    );
    // unknown codes, a lone % at the end, lower case: as written
    assert_eq!(expand("%x %n 5% %", &v), "%x %n 5% %");
    // %%N is a literal %N, not the name
    assert_eq!(expand("%%N", &v), "%N");
    // a value holding a placeholder is not expanded again
    let tricky = HookVars {
        name: "%Z%%".into(),
        size: 7,
        ..HookVars::default()
    };
    assert_eq!(expand("%N/%Z", &tricky), "%Z%%/7");
    // multi-byte text around codes
    assert_eq!(expand("été %N ☃", &v), "été ubuntu.iso ☃");
}

#[test]
fn command_line_keeps_one_argument_per_element_and_the_program_as_written() {
    let v = vars();
    let template: Vec<String> = ["/bin/prog%N", "%N", "name=%N", "%C files"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let argv = command_line(&template, &v).unwrap();
    assert_eq!(
        argv,
        vec![
            "/bin/prog%N".to_string(),
            v.name.clone(),
            format!("name={}", v.name),
            "3 files".to_string(),
        ]
    );
    assert_eq!(command_line(&[], &v), None);
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_real_program_gets_each_argument_whole_and_nothing_is_executed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("argv");
    let v = vars();
    // python3 writes each argument on its own, NUL-separated; runs in `dir`
    let script =
        "import sys\nopen(sys.argv[1], 'wb').write(b'\\0'.join(a.encode() for a in sys.argv[2:]))";
    let template = s(&[
        "python3",
        "-c",
        script,
        out.to_str().unwrap(),
        "%N",
        "n=%N;%Z",
    ]);
    let argv = command_line(&template, &v).unwrap();
    let f = run(&argv, Duration::from_secs(10)).await;
    assert_eq!(f.outcome, Outcome::Exited(0), "{f:?}");
    let got = std::fs::read(&out).unwrap();
    let parts: Vec<&[u8]> = got.split(|&b| b == 0).collect();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0], v.name.as_bytes());
    assert_eq!(parts[1], format!("n={};123456", v.name).as_bytes());
    assert!(
        !std::path::Path::new("x").exists(),
        "nothing ran $(touch x)"
    );
    assert!(!dir.path().join("x").exists());
}

#[tokio::test]
async fn exit_codes_signals_the_stderr_tail_and_the_level() {
    let f = run(
        &s(&[
            "python3",
            "-c",
            "import sys; sys.stderr.write('A' * 5000 + 'the end\\n'); sys.exit(3)",
        ]),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(f.outcome, Outcome::Exited(3));
    assert_eq!(f.outcome.level(), EventLevel::Warn);
    assert_eq!(f.stderr_tail.len(), STDERR_TAIL);
    assert!(f.stderr_tail.ends_with(b"the end\n"));
    let msg = f.message("t", HookWhen::Completed, "python3");
    assert!(
        msg.starts_with("t: on_complete program python3 exited with code 3; stderr: AAA"),
        "{msg}"
    );
    assert!(msg.ends_with("the end"), "{msg}");

    let f = run(&s(&["true"]), Duration::from_secs(10)).await;
    assert_eq!(f.outcome, Outcome::Exited(0));
    assert_eq!(f.outcome.level(), EventLevel::Info);
    assert_eq!(
        f.message("t", HookWhen::Added, "true"),
        "t: on_added program true exited with code 0"
    );

    let f = run(
        &s(&[
            "python3",
            "-c",
            "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
        ]),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(f.outcome, Outcome::Signalled(15));
}

#[tokio::test]
async fn a_program_past_the_timeout_is_killed_and_a_missing_one_is_reported() {
    let started = std::time::Instant::now();
    let f = run(
        &s(&[
            "python3",
            "-c",
            "import sys, time; sys.stderr.write('waiting\\n'); sys.stderr.flush(); time.sleep(60)",
        ]),
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(f.outcome, Outcome::Killed(1));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(f.stderr_tail, b"waiting\n");
    assert!(
        f.message("t", HookWhen::Completed, "python3")
            .contains("killed after 1 s")
    );

    let f = run(&s(&["/nonexistent/ratorrent-hook"]), Duration::from_secs(1)).await;
    let Outcome::NotStarted(e) = &f.outcome else {
        panic!("{f:?}")
    };
    assert!(e.contains("No such file or directory"), "{e}");
    assert!(
        f.message("t", HookWhen::Added, "/nonexistent/ratorrent-hook")
            .contains("could not start: No such file or directory")
    );
}

#[tokio::test]
async fn the_timeout_kills_what_the_program_started_too() {
    let dir = std::env::temp_dir().join(format!("rat-hook-group-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("child.pid");
    let script = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
    let f = run(&s(&["sh", "-c", &script]), Duration::from_secs(1)).await;
    assert_eq!(f.outcome, Outcome::Killed(1));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    // the grandchild is gone, or a zombie waiting for init to reap it
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim().chars().next()))
            .flatten();
        if matches!(state, None | Some('Z')) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the program's child still runs: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_stderr_tail_is_made_safe_for_a_terminal() {
    let f = Finished {
        outcome: Outcome::Exited(1),
        stderr_tail: b"bad\x1b[2J\nnext\xff".to_vec(),
    };
    let msg = f.message("t", HookWhen::Completed, "p");
    assert!(!msg.contains('\x1b') && !msg.contains('\n'), "{msg:?}");
    assert!(msg.contains("bad") && msg.contains("next"), "{msg:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_programs_run_at_once_and_each_result_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = HookRunner::new(tx, 10);
    // each program marks itself running, records how many are, and unmarks itself
    let script = "import os, sys, time\nd, me = sys.argv[1], sys.argv[2]\n\
        open(os.path.join(d, 'run-' + me), 'w').close()\n\
        n = len([f for f in os.listdir(d) if f.startswith('run-')])\n\
        open(os.path.join(d, 'seen-' + me), 'w').write(str(n))\n\
        time.sleep(0.3)\nos.remove(os.path.join(d, 'run-' + me))";
    let started = std::time::Instant::now();
    for i in 0..8 {
        let argv = s(&[
            "python3",
            "-c",
            script,
            dir.path().to_str().unwrap(),
            &i.to_string(),
        ]);
        runner.spawn(TorrentId(i), format!("t{i}"), HookWhen::Completed, argv);
    }
    // spawning returns at once
    assert!(started.elapsed() < Duration::from_millis(200));
    let mut done = Vec::new();
    while done.len() < 8 {
        let ev = tokio::time::timeout(Duration::from_secs(15), rx.recv())
            .await
            .expect("every program reports")
            .unwrap();
        let SessionEvent::HookDone {
            torrent,
            level,
            message,
        } = ev
        else {
            panic!("{ev:?}")
        };
        assert_eq!(level, EventLevel::Info, "{message}");
        assert!(message.contains("exited with code 0"), "{message}");
        done.push(torrent);
    }
    done.sort();
    assert_eq!(done, (0..8).map(TorrentId).collect::<Vec<_>>());
    for i in 0..8 {
        let seen: usize = std::fs::read_to_string(dir.path().join(format!("seen-{i}")))
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (1..=MAX_RUNNING_HOOKS).contains(&seen),
            "{seen} ran at once"
        );
    }
}

#[tokio::test]
async fn a_child_left_behind_holding_stderr_does_not_hold_up_the_result() {
    let started = std::time::Instant::now();
    // the shell exits at once; the sleep it left keeps the stderr pipe open
    let f = run(
        &s(&["sh", "-c", "echo early >&2; sleep 4 & exit 0"]),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(f.outcome, Outcome::Exited(0));
    assert_eq!(f.stderr_tail, b"early\n");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
