//! Reads back the `iterations.csv` a study wrote ([`crate::report::iterations_csv`]): per
//! (scenario, tuner, seed) run, each control interval's per-class ratio p99 / SLO and decision times, so metrics
//! defined after a run (such as [`crate::report::tail_fairness`]) can be computed on committed
//! results without rerunning them. Reads only the file it is given.

use crate::EvalError;
use std::path::Path;

/// One run's control intervals, as read from an `iterations.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvRun {
    /// Scenario label (the file's `scenario` column).
    pub scenario: String,
    /// Tuner name.
    pub tuner: String,
    /// Seed.
    pub seed: u64,
    /// Per control interval (warm-up windows, with negative iterations, left out), in
    /// iteration order: the ratio of every class of the run's scenario in the file's column order
    /// (NaN = no flow; a class the scenario lacks, an empty cell, is left out).
    pub ratios: Vec<Vec<f64>>,
    /// Per control interval, the controller's own wall and thread-CPU seconds of deciding
    /// (`decide_wall_s`, `decide_cpu_s`); NaN in files written before those columns existed
    /// (their `decide_s` also counted waiting for other runs' threads and is not read).
    pub decide_s: Vec<(f64, f64)>,
    /// Per control interval, the model's speed against pktsim in that decision
    /// ([`crate::report::speed_ratio`] of `pktsim_cpu_s`, `model_cpu_s` and
    /// `model_evaluations`); NaN where the decision scored nothing, on the testbed, and in files
    /// written before those columns existed.
    pub speed: Vec<f64>,
    /// Per control interval, the model's ratio of every class at the configuration in force, on
    /// the interval's own flows (`model_ratio_<class>`, in the order of `ratios`); NaN where the
    /// decision had no model view and in files written before those columns existed.
    pub model_ratios: Vec<Vec<f64>>,
}

impl CsvRun {
    /// The model's relative error at every (control interval, class) where both the measured
    /// and the model's ratio are known: |r̂ − r| / r, the validation's error measured in the
    /// loop (the model on the interval's own flows, before calibration).
    pub fn model_errors(&self) -> Vec<f64> {
        self.ratios
            .iter()
            .zip(&self.model_ratios)
            .flat_map(|(r, m)| r.iter().zip(m))
            .filter(|(r, m)| r.is_finite() && **r > 0.0 && m.is_finite())
            .map(|(r, m)| (m - r).abs() / r)
            .collect()
    }
}

/// The runs of `path` in the order they first appear.
pub fn read(path: &Path) -> Result<Vec<CsvRun>, EvalError> {
    let err = |message: String| EvalError::Read {
        path: path.display().to_string(),
        message,
    };
    let mut rdr = csv::Reader::from_path(path).map_err(|e| err(e.to_string()))?;
    let header = rdr.headers().map_err(|e| err(e.to_string()))?.clone();
    let col = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            err(format!(
                "no column {name:?}: is this an iterations.csv written by `eval`?"
            ))
        })
    };
    let (scenario, tuner, seed, iteration) = (col("scenario")?, col("tuner")?, col("seed")?, col("iteration")?);
    let ratio_cols: Vec<usize> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| h.starts_with("ratio_"))
        .map(|(i, _)| i)
        .collect();
    if ratio_cols.is_empty() {
        return Err(err(
            "no ratio_<class> column: is this an iterations.csv written by `eval`?".into(),
        ));
    }
    let optional = |name: &str| header.iter().position(|h| h == name);
    // Each ratio column's model counterpart, if the file has it.
    let model_cols: Vec<Option<usize>> = ratio_cols
        .iter()
        .map(|&i| optional(&format!("model_{}", &header[i])))
        .collect();
    let (wall_col, cpu_col) = (optional("decide_wall_s"), optional("decide_cpu_s"));
    let (evals_col, model_col, sim_col) = (
        optional("model_evaluations"),
        optional("model_cpu_s"),
        optional("pktsim_cpu_s"),
    );
    let mut runs: Vec<CsvRun> = Vec::new();
    let mut order: Vec<Vec<i64>> = Vec::new();
    for (n, rec) in rdr.records().enumerate() {
        // Line n + 2: one header line, lines counted from 1.
        let line = n + 2;
        let rec = rec.map_err(|e| err(format!("line {line}: {e}")))?;
        let field = |i: usize| rec.get(i).unwrap_or("");
        let num = |i: usize, what: &str| -> Result<f64, EvalError> {
            field(i)
                .trim()
                .parse::<f64>()
                .map_err(|_| err(format!("line {line}: {what} {:?} is not a number", field(i))))
        };
        let it = field(iteration).trim().parse::<i64>().map_err(|_| {
            err(format!(
                "line {line}: iteration {:?} is not an integer",
                field(iteration)
            ))
        })?;
        if it < 0 {
            continue;
        }
        let sd = field(seed)
            .trim()
            .parse::<u64>()
            .map_err(|_| err(format!("line {line}: seed {:?} is not a whole number", field(seed))))?;
        // An empty ratio cell: the class is not in this row's scenario (a file merging scenarios
        // with other classes, [`crate::report::merge_csv`]); its model column goes with it.
        let present: Vec<usize> = (0..ratio_cols.len())
            .filter(|&k| !field(ratio_cols[k]).trim().is_empty())
            .collect();
        let ratios = present
            .iter()
            .map(|&k| num(ratio_cols[k], header.get(ratio_cols[k]).unwrap_or("ratio")))
            .collect::<Result<Vec<f64>, _>>()?;
        let timed = |c: Option<usize>, what: &str| c.map_or(Ok(f64::NAN), |i| num(i, what));
        // An empty model cell: no model view in that decision.
        let model_ratios = present
            .iter()
            .map(|&k| &model_cols[k])
            .map(|c| match c {
                Some(i) if !field(*i).trim().is_empty() => num(*i, header.get(*i).unwrap_or("model_ratio")),
                _ => Ok(f64::NAN),
            })
            .collect::<Result<Vec<f64>, _>>()?;
        let decide = (timed(wall_col, "decide_wall_s")?, timed(cpu_col, "decide_cpu_s")?);
        let evaluations = timed(evals_col, "model_evaluations")?;
        let speed = if evaluations.is_finite() && evaluations >= 0.0 {
            crate::report::speed_ratio(
                timed(sim_col, "pktsim_cpu_s")?,
                timed(model_col, "model_cpu_s")?,
                evaluations as usize,
            )
        } else {
            f64::NAN
        };
        let (sc, tu) = (field(scenario), field(tuner));
        let k = match runs
            .iter()
            .position(|r| r.scenario == sc && r.tuner == tu && r.seed == sd)
        {
            Some(k) => k,
            None => {
                runs.push(CsvRun {
                    scenario: sc.to_string(),
                    tuner: tu.to_string(),
                    seed: sd,
                    ratios: Vec::new(),
                    decide_s: Vec::new(),
                    speed: Vec::new(),
                    model_ratios: Vec::new(),
                });
                order.push(Vec::new());
                runs.len() - 1
            }
        };
        if order[k].contains(&it) {
            return Err(err(format!(
                "line {line}: iteration {it} of {sc}/{tu}/seed {sd} appears twice: were two files concatenated?"
            )));
        }
        runs[k].ratios.push(ratios);
        runs[k].decide_s.push(decide);
        runs[k].speed.push(speed);
        runs[k].model_ratios.push(model_ratios);
        order[k].push(it);
    }
    if runs.is_empty() {
        return Err(err("no rows under the header: the run wrote no interval".into()));
    }
    // Rows are written in iteration order; sort anyway, so a reordered file reads the same.
    for (run, its) in runs.iter_mut().zip(order) {
        type Row = (i64, Vec<f64>, (f64, f64), f64, Vec<f64>);
        let mut rows: Vec<Row> = its
            .into_iter()
            .zip(std::mem::take(&mut run.ratios))
            .zip(std::mem::take(&mut run.decide_s))
            .zip(std::mem::take(&mut run.speed))
            .zip(std::mem::take(&mut run.model_ratios))
            .map(|((((i, r), d), v), m)| (i, r, d, v, m))
            .collect();
        rows.sort_by_key(|r| r.0);
        for (_, r, d, v, m) in rows {
            run.ratios.push(r);
            run.decide_s.push(d);
            run.speed.push(v);
            run.model_ratios.push(m);
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(f.path(), text).expect("write temp file");
        f
    }

    const HEADER: &str =
        "scenario,tuner,seed,iteration,minutes,p99_AF11,p99_AF21,ratio_AF11,ratio_AF21,objective,reason\n";

    #[test]
    fn reads_runs_in_iteration_order_without_the_warm_up() {
        let f = file(&format!(
            "{HEADER}high,polyphony,0,-1,-0.2,1,1,9.0,9.0,5,\"warm, up\"\n\
             high,polyphony,0,1,0.2,1,1,0.5,NaN,1,\"b\"\n\
             high,polyphony,0,0,0.0,1,1,2.0,0.25,2,\"a, with a comma\"\n\
             high,fixed,0,0,0.0,1,1,3.0,3.0,4,\"\"\n"
        ));
        let runs = read(f.path()).expect("a valid file");
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].tuner.as_str(), runs[0].seed), ("polyphony", 0));
        assert_eq!(runs[0].ratios.len(), 2);
        assert_eq!(runs[0].ratios[0], vec![2.0, 0.25]);
        assert!(runs[0].ratios[1][1].is_nan());
        assert_eq!(runs[1].ratios, vec![vec![3.0, 3.0]]);
        // A file without the decision-time columns reads them as unknown.
        assert!(runs[0].decide_s.iter().all(|(w, c)| w.is_nan() && c.is_nan()));
    }

    #[test]
    fn reads_the_decision_times_in_iteration_order_and_ignores_the_old_decide_s() {
        let f = file(
            "scenario,tuner,seed,iteration,ratio_AF11,objective,reason,decide_s,decide_wall_s,decide_cpu_s\n\
             high,polyphony,0,1,0.5,1,\"b\",218.0,0.25,0.20\n\
             high,polyphony,0,0,2.0,2,\"a\",1.0,0.125,0.0625\n",
        );
        let runs = read(f.path()).expect("a valid file");
        assert_eq!(runs[0].ratios, vec![vec![2.0], vec![0.5]]);
        assert_eq!(runs[0].decide_s, vec![(0.125, 0.0625), (0.25, 0.20)]);
        assert!(runs[0].speed.iter().all(|v| v.is_nan()), "no speed columns, no speed");
        assert!(
            runs[0].model_ratios.iter().flatten().all(|v| v.is_nan()),
            "no model columns"
        );
        let f = file(
            "scenario,tuner,seed,iteration,ratio_AF11,decide_wall_s,decide_cpu_s\nhigh,polyphony,0,0,2.0,fast,0.1\n",
        );
        let e = read(f.path()).expect_err("bad time").to_string();
        assert!(e.contains("decide_wall_s") && e.contains("\"fast\""), "{e}");
    }

    #[test]
    fn reads_the_model_speed_of_each_decision() {
        // Interval 0: pktsim 0.5 s, the model 0.01 s for 250 configurations → 12 500×;
        // interval 1 scored nothing; the testbed's interval has no pktsim time.
        let f = file(
            "scenario,tuner,seed,iteration,ratio_AF11,model_evaluations,model_cpu_s,pktsim_cpu_s\n\
             high,polyphony,0,0,2.0,250,0.01,0.5\n\
             high,polyphony,0,1,0.5,0,0,0.5\n\
             tb,polyphony,0,0,0.5,250,0.01,NaN\n",
        );
        let runs = read(f.path()).expect("a valid file");
        assert!((runs[0].speed[0] - 12_500.0).abs() < 1e-6, "{:?}", runs[0].speed);
        assert!(runs[0].speed[1].is_nan() && runs[1].speed[0].is_nan());
        let f = file("scenario,tuner,seed,iteration,ratio_AF11,model_evaluations,model_cpu_s,pktsim_cpu_s\nhigh,polyphony,0,0,2.0,250,slow,0.5\n");
        let e = read(f.path()).expect_err("bad time").to_string();
        assert!(e.contains("model_cpu_s") && e.contains("\"slow\""), "{e}");
    }

    #[test]
    fn reads_the_models_ratios_at_the_configuration_in_force() {
        // Interval 1 comes first in the file; interval 0's decision had no model view.
        let f = file(
            "scenario,tuner,seed,iteration,ratio_AF11,ratio_AF21,reason,model_ratio_AF11,model_ratio_AF21\n\
             high,polyphony,0,1,0.5,0.8,\"b\",0.4,NaN\n\
             high,polyphony,0,0,2.0,1.0,\"a\",,\n",
        );
        let runs = read(f.path()).expect("a valid file");
        assert!(runs[0].model_ratios[0].iter().all(|v| v.is_nan()));
        assert_eq!(runs[0].model_ratios[1][0], 0.4);
        assert!(runs[0].model_ratios[1][1].is_nan());
        // Only interval 1's AF11 has both: |0.4 − 0.5| / 0.5.
        assert_eq!(runs[0].model_errors(), vec![0.19999999999999996]);
        let f = file("scenario,tuner,seed,iteration,ratio_AF11,model_ratio_AF11\nhigh,polyphony,0,0,2.0,low\n");
        let e = read(f.path()).expect_err("bad model ratio").to_string();
        assert!(e.contains("model_ratio_AF11") && e.contains("\"low\""), "{e}");
    }

    #[test]
    fn a_file_that_is_not_an_iterations_csv_is_a_clear_error() {
        let f = file("a,b\n1,2\n");
        let e = read(f.path()).expect_err("not an iterations.csv").to_string();
        assert!(e.contains("no column \"scenario\""), "{e}");
        let f = file(&format!("{HEADER}high,polyphony,0,0,0.0,1,1,two,0.5,1,\"\"\n"));
        let e = read(f.path()).expect_err("bad number").to_string();
        assert!(e.contains("line 2") && e.contains("\"two\""), "{e}");
        let f = file(&format!(
            "{HEADER}high,polyphony,0,0,0.0,1,1,1,1,1,\"\"\nhigh,polyphony,0,0,0.0,1,1,1,1,1,\"\"\n"
        ));
        let e = read(f.path()).expect_err("duplicate").to_string();
        assert!(e.contains("appears twice"), "{e}");
        let e = read(file(HEADER).path()).expect_err("header only").to_string();
        assert!(e.contains("no rows"), "{e}");
        let e = read(Path::new("/nonexistent/iterations.csv"))
            .expect_err("missing")
            .to_string();
        assert!(e.contains("/nonexistent/iterations.csv"), "{e}");
    }

    #[test]
    fn a_class_the_runs_scenario_lacks_is_left_out() {
        let f = file(
            "scenario,tuner,seed,iteration,ratio_c0,ratio_c1,ratio_c2,model_ratio_c0,model_ratio_c1,model_ratio_c2\n\
             a,polyphony,0,0,0.5,NaN,,0.4,0.6,\n\
             b,polyphony,0,0,0.1,0.2,0.3,0.1,,0.3\n",
        );
        let runs = read(f.path()).unwrap();
        assert_eq!(runs[0].ratios[0].len(), 2);
        assert!(runs[0].ratios[0][1].is_nan());
        assert_eq!(runs[0].model_ratios[0], vec![0.4, 0.6]);
        assert_eq!(runs[1].ratios[0], vec![0.1, 0.2, 0.3]);
        assert!(runs[1].model_ratios[0][1].is_nan() && runs[1].model_ratios[0][2] == 0.3);
    }
}
