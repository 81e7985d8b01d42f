//! Socket options of the generator: class marks (IP_TOS, SO_MARK), TCP_NODELAY, TCP_INFO,
//! and the CLOCK_MONOTONIC clock every timestamp of the ground-truth log uses.

use std::os::fd::RawFd;

/// CLOCK_MONOTONIC in nanoseconds (the clock of eBPF's `bpf_ktime_get_ns`).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn setsockopt_u32(fd: RawFd, level: i32, opt: i32, v: u32) -> std::io::Result<()> {
    let val = v as libc::c_int;
    // SAFETY: the pointer and length describe a live c_int.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &val as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Marks a socket for class `tos >> 2`: `IP_TOS = tos`, `SO_MARK = mark`.
pub fn mark_class(fd: RawFd, tos: u8, mark: u32) -> std::io::Result<()> {
    setsockopt_u32(fd, libc::IPPROTO_IP, libc::IP_TOS, tos as u32)?;
    setsockopt_u32(fd, libc::SOL_SOCKET, libc::SO_MARK, mark)
}

/// The congestion window (segments) TCP_INFO reports for a connected socket.
pub fn snd_cwnd(fd: RawFd) -> std::io::Result<u32> {
    // SAFETY: tcp_info is plain old data; zeroed is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    if rc == 0 {
        Ok(info.tcpi_snd_cwnd)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Raises the soft limit of open files to the hard limit (every open flow holds two sockets
/// in this process: the sender's and the sink's).
pub fn raise_nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
    r.rlim_cur
}
