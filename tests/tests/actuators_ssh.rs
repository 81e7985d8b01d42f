//! End-to-end test of the tc actuator driving a Linux switch over SSH through a real sshd
//! started in the switch namespace (fixture `actuators_fixture`, prefix `ppa6`).

mod actuators_fixture;

use actuators_fixture::sshd::Sshd;
use actuators_fixture::{initial_config, must, root_or_skip, same_config, Bed, FaultRunner};
use polyphony_actuator::{Actuator, ActuatorError, SshConfig};
use polyphony_actuator_tc::{tc_over_ssh_with, EcnMode, TcConfig, TcOverSsh};
use polyphony_spec::Bytes;
use std::sync::Arc;

fn switch_config(bed: &Bed, sshd: &Sshd, known_hosts: std::path::PathBuf) -> TcOverSsh {
    let mut tc = TcConfig::new(None, "rx", actuators_fixture::LINK);
    tc.ecn = EcnMode::Auto;
    tc.ecn_map_pin = Some(bed.pin().into());
    tc.manage_buffers = false; // a switch CLI sets weights and ECN thresholds
    tc.tc = "/usr/sbin/tc".into();
    tc.bpftool = "/usr/sbin/bpftool".into();
    TcOverSsh {
        ssh: SshConfig {
            host: sshd.addr.clone(),
            user: "root".into(),
            port: 22,
            identity: sshd.client_key.clone(),
            known_hosts,
            connect_timeout_secs: 5,
            client_namespace: Some(bed.ns("rx")),
            ssh: "ssh".into(),
        },
        tc,
    }
}

#[test]
fn switch_cli_linux_tc_changes_weights_through_sshd() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa6", 0);
    let sshd = Sshd::start(&bed.ns("sw"), "198.18.100.1", &bed.ns("rx"));
    println!("sshd pid {}", sshd.pid());
    let runner = Arc::new(FaultRunner::recording());
    let mut sw = tc_over_ssh_with(switch_config(&bed, &sshd, sshd.known_hosts.clone()), runner.clone())
        .expect("build the switch actuator (runs the red probe over SSH)");
    assert_eq!(sw.name(), "switch");
    let initial = initial_config();
    let before = bed.snapshot();

    // Read back through SSH.
    let rb = sw.read_back().expect("read back over ssh").overlay(&initial);
    same_config(&rb, &initial).expect("initial state over ssh");

    // New weights (and one threshold), planned from the state read over SSH.
    let mut target = initial.clone();
    for (c, w) in target.classes.iter_mut().zip([0.25, 0.25, 0.5]) {
        c.weight = w;
    }
    target.classes[0].ecn_threshold = Bytes(15_000);
    let plan = sw.plan_live(&target).expect("plan");
    println!("{plan}");
    assert_eq!(plan.len(), 4, "3 HTB classes + 1 map entry");
    for c in plan.commands() {
        assert!(
            c.starts_with("ip netns exec ppa6-rx ssh -F none -o BatchMode=yes -o StrictHostKeyChecking=yes"),
            "{c}"
        );
        assert!(c.contains(" -l root 198.18.100.1 -- "), "{c}");
    }
    assert_eq!(bed.snapshot(), before, "planning changed the system");
    runner.clear();
    sw.apply(&plan).expect("apply over ssh");
    assert!(
        runner.commands().iter().all(|c| c.contains(" ssh ")),
        "{:#?}",
        runner.commands()
    );

    // Read back through the same path, and independently on the switch namespace.
    let got = sw.read_back().expect("read back").overlay(&initial);
    same_config(&got, &target).expect("weights read back over ssh");
    let classes = must(&["tc", "-n", "ppa6-sw", "-d", "class", "show", "dev", "rx"]);
    assert!(
        classes.contains("class htb 1:26 parent 1:1 leaf 26: prio 0 quantum 3028 rate 50Mbit"),
        "{classes}"
    );
    assert!(sw.plan_live(&target).expect("plan").is_empty());

    sw.rollback().expect("rollback over ssh");
    assert_eq!(bed.snapshot(), before);
    assert!(sshd.log().contains("Accepted publickey for root"), "{}", sshd.log());
}

#[test]
fn switch_cli_refuses_an_unknown_host_key() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa7", 0);
    let sshd = Sshd::start(&bed.ns("sw"), "198.18.100.1", &bed.ns("rx"));
    // A known_hosts that holds some other key for the switch's address.
    let other = sshd.dir.path().join("other_key");
    actuators_fixture::sshd::keygen(&other);
    let wrong = sshd.dir.path().join("wrong_known_hosts");
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).expect("other key");
    std::fs::write(&wrong, format!("198.18.100.1 {other_pub}")).expect("write");
    let before = bed.snapshot();
    let runner = Arc::new(FaultRunner::recording());
    let err = match tc_over_ssh_with(switch_config(&bed, &sshd, wrong), runner) {
        Ok(_) => panic!("connected despite a wrong host key"),
        Err(e) => e,
    };
    println!("{err}");
    assert!(matches!(err, ActuatorError::Config { .. }), "{err}");
    assert!(err.to_string().contains("Host key verification failed"), "{err}");
    assert_eq!(bed.snapshot(), before);
}
