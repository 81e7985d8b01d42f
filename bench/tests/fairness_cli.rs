//! The `fairness` binary on iterations.csv files: the table it prints, and bad input refused
//! with what was wrong.

use std::process::Command;

fn fairness(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fairness"))
        .args(args)
        .output()
        .expect("run the fairness binary");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn prints_the_tail_fairness_per_scenario_and_tuner_over_seeds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("iterations.csv");
    // Seed 0: the classes swap places every interval (each interval's fairness 0.5) but are even
    // on average → 1.00; seed 1: AF21 always at half of AF11 → 0.50. Warm-up rows do not count.
    let mut csv = String::from("scenario,tuner,seed,iteration,minutes,ratio_AF11,ratio_AF21,objective,reason\n");
    csv += "high,polyphony,0,-1,-0.2,9.0,0.1,5.0,\"warm-up, design point\"\n";
    for t in 0..4 {
        let (a, b) = if t % 2 == 0 { (0.4, 0.8) } else { (0.8, 0.4) };
        csv += &format!("high,polyphony,0,{t},0.0,{a},{b},1.0,\"x\"\n");
        csv += &format!("high,polyphony,1,{t},0.0,0.8,0.4,1.0,\"x\"\n");
    }
    std::fs::write(&path, csv).expect("write csv");
    let p = path.to_str().expect("utf-8 path");
    let (code, out, err) = fairness(&[p, "--last", "4"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| high | polyphony | 2 | 0.75 (0.50–1.00) |"), "{out}");
    // Over the last interval only, seed 0 is as uneven as seed 1.
    let (code, out, _) = fairness(&[p, "--last", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("| high | polyphony | 2 | 0.50 |"), "{out}");
}

#[test]
fn bad_input_is_refused_with_what_was_wrong() {
    let (code, _, err) = fairness(&["/nonexistent/iterations.csv"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/iterations.csv"), "{err}");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("summary.csv");
    std::fs::write(&path, "scenario,tuner,runs\nhigh,polyphony,5\n").expect("write csv");
    let (code, _, err) = fairness(&[path.to_str().expect("utf-8 path")]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no column \"seed\"") && err.contains("iterations.csv written by `eval`"),
        "{err}"
    );
    let (code, _, err) = fairness(&[path.to_str().expect("utf-8 path"), "--last", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--last 0"), "{err}");
    let (code, _, _) = fairness(&[]);
    assert_eq!(code, 2, "no file is a usage error");
}
