//! `candor-faultfs BACKING MOUNTPOINT [faults]`: mounts a pass-through view of BACKING at
//! MOUNTPOINT that injects the configured I/O errors, and serves it until unmounted.
//! Exit codes: 0 unmounted cleanly, 1 the mount failed, 2 bad arguments.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{}", candor_faultfs::faults::USAGE);
        return;
    }
    let config = match candor_faultfs::faults::parse_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("candor-faultfs: {e}\n{}", candor_faultfs::faults::USAGE);
            std::process::exit(2);
        }
    };
    if let Err(e) = candor_faultfs::serve(&config) {
        eprintln!(
            "candor-faultfs: cannot serve {} at {}: {e}",
            config.backing.display(),
            config.mountpoint.display()
        );
        std::process::exit(1);
    }
}
