//! `--device-spec auto`: the device's ceilings measured on the first target before the
//! plan runs, with the `ceiling` preset's points (O_DIRECT, io_uring).

use crate::efficiency::DeviceSpec;
use crate::engines::direct_supported;
use crate::plan::presets::{self, Chosen, Shape};
use crate::plan::{ErrorKind, Plan, PlanError};
use crate::runner::{self, RunSettings, StopReason, Target};
use crate::signals;
use candor_model::{TargetInfo, TestResult};

/// Measures the ceilings on `targets[0]`, whose filesystem has `free` bytes free. `say`
/// hears, before it starts, that it is measuring. Returns the ceilings and a sentence
/// for the run's warnings with the figures measured.
pub fn measure(
    targets: &mut [Target],
    plan: &Plan,
    free: u64,
    say: &mut dyn FnMut(&str),
) -> Result<(DeviceSpec, String), PlanError> {
    let Some(first) = targets.first() else {
        return Err(PlanError::usage("no target to measure"));
    };
    let first_path = first.path.clone();
    if let Err(e) = direct_supported(&first.dir) {
        return Err(PlanError::usage(format!(
            "--device-spec auto measures with O_DIRECT, which {} refuses ({e}): give the ceiling instead, e.g. --device-spec seq=510MB/s,iops=95000",
            first_path.display()
        )));
    }
    let Shape::Fixed(fixed) = &presets::chosen(Chosen::DeviceSpecAuto).shape else {
        return Err(PlanError::failed(
            "internal: the ceiling preset is not fixed points",
        ));
    };
    let mut points = fixed.points(fixed.file_size(free))?;
    let settings = RunSettings {
        direct: true,
        repeat: fixed.repeat,
        runtime_ns: Some(fixed.runtime_ns),
        keep_cache: false,
        // The ceiling is measured as it is, not warmed up, preconditioned or in rounds.
        ramp_ns: None,
        steady: None,
        precondition: None,
        ..plan.settings.clone()
    };
    for p in &mut points {
        p.settle(&settings);
    }
    say(&format!(
        "measuring the device's ceiling on {} (about 15 s)",
        first_path.display()
    ));
    let mut got: Vec<TestResult> = Vec::new();
    let mut sink = |rs: Vec<TestResult>| got.extend(rs);
    let mut quiet = runner::NoProgress;
    if let Some(StopReason::Interrupted(sig)) =
        runner::run(&mut targets[..1], &points, &settings, &mut quiet, &mut sink)
    {
        return Err(PlanError {
            kind: ErrorKind::Interrupted(sig),
            message: format!(
                "interrupted by {} while measuring the device's ceiling",
                signals::signal_name(sig)
            ),
        });
    }
    let pick = |t: &str, iops: bool| {
        got.iter()
            .find(|r| r.test == t && r.status.is_ok())
            .map(|r| if iops { r.iops.mean } else { r.throughput.mean })
    };
    let spec = DeviceSpec {
        seq_write: pick("write", false),
        seq_read: pick("read", false),
        iops_read: pick("randread", true),
        iops_write: pick("randwrite", true),
        source: "measured".into(),
    };
    if spec
        == (DeviceSpec {
            source: "measured".into(),
            ..Default::default()
        })
    {
        return Err(PlanError::failed("the device's ceiling could not be measured: every measuring test failed; give --device-spec seq=...,iops=... instead"));
    }
    let note = format!(
        "device ceiling measured on {}: sequential read {}, write {}; 4 KiB random read {:.0} IOPS, write {:.0} IOPS",
        first_path.display(),
        candor_model::units::rate_text(spec.seq_read.unwrap_or(0.0)),
        candor_model::units::rate_text(spec.seq_write.unwrap_or(0.0)),
        spec.iops_read.unwrap_or(0.0),
        spec.iops_write.unwrap_or(0.0)
    );
    Ok((spec, note))
}

/// One ceiling serves every target: the sentence that says so when some targets sit on
/// another device than the first.
pub fn other_devices(targets: &[TargetInfo]) -> Option<String> {
    let dev = |t: &TargetInfo| t.device.as_ref().map(|d| d.name.clone());
    let first = targets.first()?;
    let others: Vec<String> = targets
        .iter()
        .filter(|t| dev(t) != dev(first))
        .map(|t| t.path.clone())
        .collect();
    if others.is_empty() {
        return None;
    }
    Some(format!(
        "the device's ceiling was measured under {} only: the efficiency of {} is against that device's ceiling, not their own; run them separately with --device-spec auto, or give --device-spec",
        first.path,
        others.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_on_other_devices_are_named() {
        let on = |path: &str, dev: &str| TargetInfo {
            path: path.into(),
            device: Some(candor_model::BlockDevice {
                name: dev.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(other_devices(&[on("/a", "sda"), on("/b", "sda")]), None);
        let w = other_devices(&[on("/a", "sda"), on("/b", "sdb")]).unwrap();
        assert!(
            w.contains("measured under /a only") && w.contains("efficiency of /b"),
            "{w}"
        );
    }
}
