//! The hardware monitor's tests: the thread (a panic, a cell's summary and series) and, on
//! Linux, the CPU reader on recorded `/proc` files and fixture sysfs trees.

use super::*;

/// A monitor thread that panicked is reported when the monitor is dropped, and the drop
/// itself goes on (the run's end must not panic for it).
#[test]
fn a_panicked_monitor_thread_is_reported_not_propagated() {
    let m = HwMonitor {
        slots: Arc::new(Mutex::new(Slots::default())),
        stop: Arc::new(AtomicBool::new(false)),
        thread: std::thread::Builder::new()
            .spawn(|| panic!("sensor exploded"))
            .ok(),
    };
    drop(m);
    let boxed: Box<dyn std::any::Any + Send> = Box::new(String::from("owned"));
    assert_eq!(panic_text(boxed.as_ref()), "owned");
    let boxed: Box<dyn std::any::Any + Send> = Box::new(3u8);
    assert_eq!(panic_text(boxed.as_ref()), "no message");
}

/// On any machine (GPU or not) the monitor reads the CPU and summarises a cell.
#[test]
fn reads_this_machine_and_summarises_a_cell() {
    let m = HwMonitor::start(Duration::from_millis(100), None);
    m.begin_cell();
    let t0 = std::time::Instant::now();
    while m.latest().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = m.latest().expect("a sample within 10 s");
    assert!(s.cpu.is_some());
    assert!(["nvml", "nvidia-smi", "none"].contains(&s.gpu_source.as_str()));
    let sum = m.end_cell().expect("a summary");
    assert!(sum.samples >= 1);
    assert!(
        sum.cpu_util_pct_mean
            .is_some_and(|u| (0.0..=100.0).contains(&u))
    );
}

/// A cell's series: samples placed in seconds from the cell's origin, in order, the CPU in
/// every one; a monitor between cells keeps no series.
#[test]
fn a_cell_gets_a_series_on_its_own_clock() {
    let m = HwMonitor::start(Duration::from_millis(50), None);
    let origin = Instant::now();
    m.begin_cell_at(origin);
    let t0 = Instant::now();
    while m.slots.lock().map_or(0, |s| s.series.t.len()) < 3
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (summary, series) = m.end_cell_series();
    let series = series.expect("a series within 10 s");
    assert!(summary.is_some_and(|s| s.samples as usize >= series.t.len()));
    assert!(series.t.len() >= 3);
    assert!(series.t.windows(2).all(|w| w[0] <= w[1]), "{:?}", series.t);
    let elapsed = origin.elapsed().as_secs_f64();
    assert!(series.t.iter().all(|t| (0.0..=elapsed + 0.01).contains(t)));
    assert_eq!(series.cpu.u.len(), series.t.len());
    assert!(series.gpus.iter().all(|g| g.sm.len() == series.t.len()));
    assert!(m.end_cell_series().1.is_none(), "no cell, no series");
}

/// The Linux CPU reader on fixture trees of `/proc` and `/sys`: the figures `sysinfo` gave
/// for them (its usage formula, frequency rules and sensor labels), read through files kept
/// open and rewritten between samples as the kernel's are.
#[cfg(target_os = "linux")]
mod kernel {
    use super::super::kernel_cpu::{
        KernelCpu, MIN_USAGE_INTERVAL, cpuinfo_mhz, is_cpu_label, parse_stat,
    };
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    /// `/proc/stat` and `/proc/cpuinfo` of this project's 2-CPU container, recorded one
    /// second apart (both CPUs busy throughout).
    const STAT_0: &str = include_str!("../../testdata/hwmon/proc_stat_0.txt");
    const STAT_1: &str = include_str!("../../testdata/hwmon/proc_stat_1.txt");
    const CPUINFO: &str = include_str!("../../testdata/hwmon/proc_cpuinfo.txt");

    /// A fresh directory for one test's tree.
    fn root(test: &str) -> PathBuf {
        let r = std::env::temp_dir().join(format!("llmib-hwmon-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        r
    }

    fn put(root: &Path, path: &str, text: &str) {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// Sensors as on a desktop with a coretemp, a k10temp, an NVMe drive and an ACPI zone:
    /// the CPU ones are coretemp's package and cores and k10temp's Tctl (61.25 °C, the
    /// hottest); the drive (70 °C) and the zone are not the CPU's. coretemp has two channels
    /// labelled `Core 0`, one sensor to `sysinfo`: the first is kept.
    fn sensors(root: &Path) {
        for (path, text) in [
            ("hwmon0/name", "coretemp\n"),
            ("hwmon0/temp1_label", "Package id 0\n"),
            ("hwmon0/temp1_input", "45000\n"),
            ("hwmon0/temp2_label", "Core 0\n"),
            ("hwmon0/temp2_input", "52000\n"),
            ("hwmon0/temp3_label", "Core 0\n"),
            ("hwmon0/temp3_input", "49000\n"),
            ("hwmon1/name", "nvme\n"),
            ("hwmon1/device/model", "Samsung SSD 990 PRO 2TB  \n"),
            ("hwmon1/temp1_label", "Composite\n"),
            ("hwmon1/temp1_input", "70000\n"),
            ("hwmon2/name", "acpitz\n"),
            ("hwmon2/temp1_input", "30000\n"),
            ("hwmon3/name", "k10temp\n"),
            ("hwmon3/temp1_label", "Tctl\n"),
            ("hwmon3/temp1_input", "61250\n"),
        ] {
            put(root, &format!("sys/class/hwmon/{path}"), text);
        }
    }

    /// Usage as `sysinfo` computes it from two readings' differences, in `f32`.
    fn sysinfo_usage(nice: f32, user: f32, system: f32, irq: f32, total: f32) -> f64 {
        let p = (nice / total + user / total + system / total + irq / total) * 100.;
        f64::from(if p > 100. { 100. } else { p })
    }

    /// The recorded pair: usage, the frequency of a CPU with cpufreq and one without, the CPU
    /// sensors' maximum; a sample within 200 ms of the last keeps its usage, as `sysinfo`'s.
    #[test]
    fn reads_the_recorded_files_as_sysinfo_did() {
        let r = root("recorded");
        put(&r, "proc/stat", STAT_0);
        put(&r, "proc/cpuinfo", CPUINFO);
        put(
            &r,
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
            "2400000\n",
        );
        sensors(&r);
        let t0 = Instant::now();
        let mut k = KernelCpu::under(&r.join("proc"), &r.join("sys"), t0);
        let labels: Vec<&str> = k.sensors.iter().map(|s| s.label.as_str()).collect();
        let want = ["coretemp Package id 0", "coretemp Core 0", "k10temp Tctl"];
        assert_eq!(labels, want);
        assert_eq!(k.cpus(), 2);
        put(&r, "proc/stat", STAT_1);
        let s = k
            .read_at(t0 + Duration::from_millis(500))
            .expect("a reading");
        // user +195, system +5, steal +1 of 201 ticks.
        assert_eq!(s.util_pct, Some(sysinfo_usage(0., 195., 5., 1., 201.)));
        // cpu0: 2400 MHz; cpu1 has no cpufreq: the first `cpu MHz` line, 2596.144.
        assert_eq!(s.freq_mhz, Some((2400 + 2596) / 2));
        assert_eq!(s.temp_c, Some(61.25));
        // A hand-made reading with guest time (in user already) 150 ms later: not read yet.
        put(
            &r,
            "proc/stat",
            &STAT_1.replacen(
                "cpu  1495492 1484 198281 1089054 12637 0 4676 765 0 0",
                "cpu  1495592 1484 198311 1089154 12647 0 4676 765 20 0",
                1,
            ),
        );
        put(&r, "sys/class/hwmon/hwmon3/temp1_input", "not a number\n");
        let s = k
            .read_at(t0 + Duration::from_millis(650))
            .expect("a reading");
        assert_eq!(s.util_pct, Some(sysinfo_usage(0., 195., 5., 1., 201.)));
        assert_eq!(s.temp_c, Some(61.25), "a failed read keeps the last");
        let s = k
            .read_at(t0 + Duration::from_millis(700))
            .expect("a reading");
        // user +100 of which guest 20 (so user +80, guest +20), system +30, idle +100,
        // iowait +10: 240 ticks.
        assert_eq!(s.util_pct, Some(sysinfo_usage(0., 80., 30., 20., 240.)));
        put(&r, "sys/class/hwmon/hwmon3/temp1_input", "40000\n");
        let s = k
            .read_at(t0 + Duration::from_millis(1200))
            .expect("a reading");
        assert_eq!(s.temp_c, Some(52.0));
        assert!(MIN_USAGE_INTERVAL == Duration::from_millis(200));
        let _ = std::fs::remove_dir_all(&r);
    }

    /// A machine of 300 CPUs (a `/proc/stat` longer than the first read), none with cpufreq,
    /// whose `/proc/cpuinfo` has its first `cpu MHz` line past the first read: every CPU is
    /// counted and that line is found; with no frequency line at all there is no frequency.
    #[test]
    fn long_files_are_read_as_far_as_needed() {
        let r = root("long");
        let mut stat = String::from("cpu  10 0 10 80 0 0 0 0 0 0\n");
        for i in 0..300 {
            stat += &format!("cpu{i} 1 0 1 8 0 0 0 0 0 0\n");
        }
        stat += &format!("intr {}\nctxt 1\n", "0 ".repeat(5000));
        put(&r, "proc/stat", &stat);
        let flags = format!("flags\t\t: {}\n", "avx512f ".repeat(800));
        let cpuinfo = format!("processor\t: 0\n{flags}cpu MHz\t\t: 3187.5\n\nprocessor\t: 1\n");
        put(&r, "proc/cpuinfo", &cpuinfo);
        let mut k = KernelCpu::under(&r.join("proc"), &r.join("sys"), Instant::now());
        assert_eq!(k.cpus(), 300);
        assert_eq!(parse_stat(stat.as_bytes()).map(|p| p.1), Some(300));
        let s = k.read().expect("a reading");
        assert_eq!((s.freq_mhz, s.temp_c), (Some(3187), None));
        put(&r, "proc/cpuinfo", &format!("processor\t: 0\n{flags}"));
        assert_eq!(k.read().expect("a reading").freq_mhz, None);
        let _ = std::fs::remove_dir_all(&r);
    }

    /// The frequency line's rules: any of the architectures' keys, case aside, its last
    /// `:` field less `MHz`; a line cut at the end of a partial read does not count.
    #[test]
    fn cpuinfo_frequency_lines() {
        assert_eq!(cpuinfo_mhz(CPUINFO.as_bytes(), true), 2596);
        assert_eq!(cpuinfo_mhz(b"BogoMIPS\t: 50.00\n", false), 50);
        assert_eq!(cpuinfo_mhz(b"clock\t\t: 1000.000000MHz", true), 1000);
        assert_eq!(cpuinfo_mhz(b"clock\t\t: 1000.000000MHz", false), 0);
        assert_eq!(cpuinfo_mhz(b"cpu mhz\t: x\ncpu MHz\t: 7\n", true), 0);
        assert!(is_cpu_label("k10temp Tctl") && !is_cpu_label("nvme Composite"));
        assert_eq!(parse_stat(b"intr 1\ncpu  1 2\n"), None);
    }

    /// On this machine: the CPUs and the CPU sensors `sysinfo` finds are the ones read here.
    #[test]
    fn finds_what_sysinfo_finds_on_this_machine() {
        let k = KernelCpu::new();
        let mut sys = sysinfo::System::new().expect("sysinfo");
        sys.refresh_cpu_usage();
        assert_eq!(k.cpus(), sys.cpus().len());
        let comps = sysinfo::Components::new_with_refreshed_list().expect("components");
        let mut theirs: Vec<String> = comps
            .iter()
            .map(|c| c.label().to_owned())
            .filter(|l| is_cpu_label(l))
            .collect();
        let mut ours: Vec<String> = k.sensors.iter().map(|s| s.label.clone()).collect();
        theirs.sort();
        theirs.dedup();
        ours.sort();
        assert_eq!(ours, theirs);
    }
}
