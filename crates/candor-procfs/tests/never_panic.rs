//! Every /proc parser takes any text: random characters, and digits, spaces, colons and
//! parentheses in the kernel's layouts' alphabet. None may panic.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn kernel_file_parsers_take_anything(s in "\\PC{0,300}", digits in "[0-9 :()a-z=\\n\\t]{0,200}") {
        for t in [&s, &digits] {
            let _ = candor_procfs::PidIo::parse(t);
            let _ = candor_procfs::FdInfo::parse(t);
            let _ = candor_procfs::parse_stat(t);
            let _ = candor_procfs::parse_diskstats(t);
            let _ = candor_procfs::parse_meminfo(t);
            let _ = candor_procfs::parse_vmstat(t);
            let _ = candor_procfs::parse_pressure(t);
            let _ = candor_procfs::parse_mountinfo(t);
            let _ = candor_procfs::parse_mounts(t);
            let _ = candor_procfs::parse_swaps(t);
            let _ = candor_procfs::parse_cpuinfo(t);
            let _ = candor_procfs::cache_size(t);
        }
    }
}
