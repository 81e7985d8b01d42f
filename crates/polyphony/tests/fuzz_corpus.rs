//! The bounded fuzzing CI runs: every input of the committed fuzz corpus (`fuzz/corpus/TARGET/`)
//! and every input that once made a target fail (`fuzz/regressions/TARGET/`) goes through the
//! target's body (`polyphony::fuzzing`), which must return — no panic — within a second.
//! `scripts/fuzz.sh` runs the fuzzer itself (docs/operating.md, "Fuzzing").

use polyphony::fuzzing::TARGETS;
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn fuzz_corpus_and_regressions_replay_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    for (name, body) in TARGETS {
        let mut replayed = 0;
        for kind in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(kind).join(name)) else {
                continue;
            };
            for e in entries {
                let path = e.expect("directory entry").path();
                let data = std::fs::read(&path).expect("corpus file");
                let t0 = Instant::now();
                if std::panic::catch_unwind(|| body(&data)).is_err() {
                    panic!("{name}: {} makes the target panic", path.display());
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(1),
                    "{name}: {} takes {:?}",
                    path.display(),
                    t0.elapsed()
                );
                replayed += 1;
            }
        }
        assert!(
            replayed >= 3,
            "{name}: only {replayed} corpus inputs under fuzz/corpus/{name}"
        );
    }
}
