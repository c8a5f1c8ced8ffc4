//! The loader of a build made without the BPF programs (no clang at build time, or
//! CANDOR_BPF=off): it has the same surface as enabled.rs, and `load` says why the BPF
//! witness is unavailable.

use crate::raw::{RawPhase, RawSnapshot};
use crate::{TraceError, TraceOptions, Unavailable};

pub fn built() -> Result<(), String> {
    Err(env!("CANDOR_BPF_DISABLED_WHY").to_string())
}

/// Never constructed in this build.
pub enum Loaded {}

impl Loaded {
    pub fn load(_opts: &TraceOptions) -> Result<Loaded, Unavailable> {
        Err(Unavailable::NotBuilt(
            env!("CANDOR_BPF_DISABLED_WHY").to_string(),
        ))
    }

    pub fn add_pid(&mut self, _pid: u32) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn quiet_thread(&mut self, _tid: u32) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn add_job_pid(&mut self, _pid: u32) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn remove_pid(&mut self, _pid: u32) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn tracked(&self) -> Result<Vec<u32>, TraceError> {
        match *self {}
    }

    pub fn inflight(&self) -> Result<Vec<(u32, u64)>, TraceError> {
        match *self {}
    }

    pub fn read(&self) -> Result<RawSnapshot, TraceError> {
        match *self {}
    }

    pub fn read_with(&self, _want_files: bool, _runs: bool) -> Result<RawSnapshot, TraceError> {
        match *self {}
    }

    pub fn drain(&mut self) -> Result<Vec<RawPhase>, TraceError> {
        match *self {}
    }

    pub fn open(&self) -> Result<Vec<RawPhase>, TraceError> {
        match *self {}
    }

    #[allow(clippy::type_complexity)]
    pub fn channels(
        &self,
    ) -> Result<
        (
            Vec<(crate::raw::ChanKey, crate::raw::ChanStat)>,
            Vec<crate::raw::ChanLost>,
        ),
        TraceError,
    > {
        match *self {}
    }

    pub fn lost(&self) -> Result<Vec<RawPhase>, TraceError> {
        match *self {}
    }

    #[allow(clippy::type_complexity)]
    pub fn block_files(
        &self,
    ) -> Result<Vec<(crate::raw::BlkFileKey, crate::raw::BlkFileStat)>, TraceError> {
        match *self {}
    }

    pub fn tree_io(&self) -> Result<Vec<(u32, crate::raw::TreeIo)>, TraceError> {
        match *self {}
    }

    pub fn traces_syscalls(&self) -> bool {
        match *self {}
    }

    pub fn take_recording(
        &mut self,
        _sink: Box<dyn FnMut(crate::record::RawCall) + Send>,
    ) -> Result<crate::record::Recording, TraceError> {
        match *self {}
    }

    pub fn count_syscalls(&mut self, _on: bool) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn counts_syscalls(&self) -> bool {
        match *self {}
    }

    pub fn count_cache_inserts(&mut self, _on: bool) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn counts_cache_inserts(&self) -> bool {
        match *self {}
    }

    pub fn count_dirtying(&mut self, _on: bool) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn suspend_dirtying(&mut self, _on: bool) -> Result<(), TraceError> {
        match *self {}
    }

    pub fn counts_dirtying(&self) -> bool {
        match *self {}
    }

    pub fn mark_written(&mut self, _path: &std::path::Path) -> Result<bool, TraceError> {
        match *self {}
    }

    pub fn skipped(&self) -> Vec<(String, String)> {
        match *self {}
    }
}
