//! The models simulate DCTCP only: a class configured for another congestion-control algorithm
//! is refused with an error naming the class and the algorithm, never predicted as if it ran
//! DCTCP; `dctcp` (or a DCTCP variant such as `pp_dctcp`) is accepted and changes nothing.

use polyphony_model::{FlowSim, NetworkModel, PktSim};
use polyphony_spec::{CongestionControl, Dscp};

mod common;
use common::{cfg, mixed};

#[test]
fn a_class_on_cubic_is_refused_and_dctcp_changes_nothing() {
    let input = mixed();
    let base = cfg((0.5, 0.5), (30_000, 30_000), (10, 10));
    let mut cubic = base.clone();
    cubic.classes[1].congestion_control = Some(CongestionControl::new("cubic").unwrap());
    let mut dctcp = base.clone();
    for c in &mut dctcp.classes {
        c.congestion_control = Some(CongestionControl::new("pp_dctcp").unwrap());
    }
    let models: [Box<dyn NetworkModel>; 2] = [Box::new(PktSim::default()), Box::new(FlowSim::default())];
    for m in models {
        let out = m.evaluate(&input, &[cubic.clone(), base.clone(), dctcp.clone()]);
        let e = out[0].as_ref().expect_err("cubic predicted as DCTCP").to_string();
        assert!(e.contains("AF21") && e.contains("\"cubic\""), "{}: {e}", m.name());
        let (a, b) = (&out[1].as_ref().unwrap().sli, &out[2].as_ref().unwrap().sli);
        assert_eq!(a.get(Dscp::AF11), b.get(Dscp::AF11), "{}", m.name());
        assert_eq!(a.get(Dscp::AF21), b.get(Dscp::AF21), "{}", m.name());
    }
}
