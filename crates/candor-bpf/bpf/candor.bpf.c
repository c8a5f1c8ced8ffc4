// SPDX-License-Identifier: GPL-2.0 OR MIT
/* candor's in-kernel witness. Everything is aggregated here, in maps that user space reads
 * when it takes a snapshot; the only per-event output is one record per closed file
 * (a "phase"), which is one event per open..close, not per I/O.
 *
 * Tracepoints only (classic `tracepoint/` programs): the record layouts below are the
 * ones in /sys/kernel/tracing/events/<cat>/<name>/format, checked by the loader's probe
 * before anything is attached. The struct layouts shared with user space are mirrored in
 * src/raw.rs (#[repr(C)]); change both together. */
#include "candor_bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before the programs are verified (read-only data, so the verifier
 * removes the code it turns off). 0: no per-file phases or per-file totals, only the
 * per-syscall figures (what `candor run` needs; cheaper per call). */
volatile const __u32 candor_phases = 1;

/* Threads of the tracked set that take this name (prctl PR_SET_NAME, as Rust's named
 * threads do when they start) are left out of the syscall figures: a monitor's own
 * sampling thread inside the traced process is not the workload. Empty: none. */
volatile const char candor_quiet_comm[16] = {};

#define NSLOTS 30
#define SLOT_READ 0
#define SLOT_WRITE 1
#define SLOT_PREAD64 2
#define SLOT_PWRITE64 3
#define SLOT_READV 4
#define SLOT_WRITEV 5
#define SLOT_PREADV 6
#define SLOT_PWRITEV 7
#define SLOT_PREADV2 8
#define SLOT_PWRITEV2 9
#define SLOT_LSEEK 10
#define SLOT_FSYNC 11
#define SLOT_FDATASYNC 12
#define SLOT_OPENAT 13
#define SLOT_CLOSE 14
#define SLOT_IO_URING_ENTER 15
#define SLOT_PAGE_FAULT 16
/* Metadata calls, counted and timed only (no phase): what a metadata benchmark (mdtest,
 * bonnie++'s file tests) claims to do. SLOT_CREATE counts openat with O_CREAT (at entry,
 * beside its openat) and creat/mknod. */
#define SLOT_MKDIR 17
#define SLOT_RMDIR 18
#define SLOT_UNLINK 19
#define SLOT_STAT 20
#define SLOT_RENAME 21
#define SLOT_CREATE 22
/* Calls that return bytes without being a file phase: a directory listing's records, and
 * copies made in the kernel (what a copy benchmark may use instead of read and write). */
#define SLOT_GETDENTS 23
#define SLOT_COPY_FILE_RANGE 24
#define SLOT_SENDFILE 25
#define SLOT_SPLICE 26
/* Asynchronous I/O set-up and submission, counted only: their data moves without read or
 * write calls, which the audit must know to not judge a figure by those calls alone.
 * SLOT_IO_GETEVENTS also counts io_pgetevents. Their `bytes` stay 0. */
#define SLOT_IO_SUBMIT 27
#define SLOT_IO_GETEVENTS 28
#define SLOT_IO_URING_SETUP 29
#define SLOT_FIRST_META SLOT_MKDIR
#define X86_O_CREAT 0100
#define AT_REMOVEDIR 0x200

#define LL_BUCKETS 256
#define L2_BUCKETS 64
#define PATH_MAX_BYTES 256

#define OWNER_FOREIGN 0
#define OWNER_TRACKED 1
#define OWNER_WRITEBACK 2
#define OWNER_KERNEL 3
#define OWNER_JOB 4

/* Values of `tracked` (and of `wb_inodes`: who dirtied the inode): the traced process set
 * itself, or another process of the same job (another MPI rank on this machine), whose
 * requests are the job's, never foreign, but not the set's own figures. */
#define SET_OWN 1
#define SET_JOB 2

#define DIAG_PHASES_LOST 0
#define DIAG_STARTS_FULL 1
#define DIAG_REQS_FULL 2
#define DIAG_FDS_FULL 3
/* Not a loss: completions the kernel did not hand to the completion program, found when
 * the request was used again and counted then (see req_recover). */
#define DIAG_COMPLETIONS_RECOVERED 4
/* Phases the ring buffer had no room for that were merged into `lost_phases` (not lost:
 * user space reads them from there at the end). */
#define DIAG_PHASES_MERGED 5
/* Block requests of the tree not counted per file because `blk_files` was full. */
#define DIAG_BLK_FILES_FULL 6
/* Not a loss: processes of the set that ended (the last thread of the group). A process
 * that exits leaves its files open in `fds`; user space collects them when this moves,
 * instead of looking through every open file at every reading. */
#define DIAG_SET_EXITS 7
#define NDIAG 8

struct sys_stat {
	__u64 count;
	__u64 bytes;
	__u64 time_ns;
	__u64 errors;
	__u64 lat[LL_BUCKETS];
};

struct l2_hist {
	__u64 b[L2_BUCKETS];
};

struct sys_start {
	__u64 ts;
	__u64 arg;
	__u32 slot;
	__u32 fd;
};

struct fd_key {
	__u32 tgid;
	__u32 fd;
};

#define PHASE_OPENED 1
#define PHASE_CLOSED 2
/* The file was in O_DIRECT mode when the phase began (the programs are built for x86_64,
 * where O_DIRECT is 040000). */
#define PHASE_DIRECT 4
#define X86_O_DIRECT 040000
/* The descriptor is a block device (its dev is the device itself, i_rdev). */
#define PHASE_BLKDEV 8
/* Several phases of one process on one file, merged in `lost_phases` because the ring
 * buffer was full when they ended: `merged` says how many. */
#define PHASE_MERGED 16

/* fcntl(fd, F_SETFL, flags): not a slot of its own (nothing is counted for it), only
 * followed so that a phase's O_DIRECT mode is the file's. */
#define SLOT_SETFL 250
#define F_SETFL 4
/* A call the audit does not count that the recording keeps (`record_call`). */
#define SLOT_RECORD 251

struct phase {
	__u32 tgid;
	__u32 fd;
	__u32 dev;
	__u32 flags;
	__u64 ino;
	__u64 open_ns;
	__u64 first_ns;
	__u64 last_ns;
	__u64 close_ns;
	__u64 rbytes;
	__u64 wbytes;
	__u64 rcalls;
	__u64 wcalls;
	__u64 io_ns;
	__u64 fsyncs;
	__u64 fsync_ns;
	__u64 lseeks;
	__u64 pos;
	__u32 size_hist[L2_BUCKETS];
	__u32 off_hist[L2_BUCKETS];
	char path[PATH_MAX_BYTES];
	/* Nanoseconds inside the read calls and inside the write calls (io_ns is their sum). */
	__u64 rio_ns;
	__u64 wio_ns;
	/* Phases this record stands for (0 or 1: one; more: PHASE_MERGED). */
	__u64 merged;
};

struct lost_key {
	__u32 tgid;
	__u32 dev;
	__u64 ino;
};

/* Per process: read and write calls the tree made that no phase holds, by cause, and the
 * kernel's own I/O counters of its threads (task->ioac, what /proc/PID/io shows), summed
 * as each thread exits. */
struct tree_io {
	/* On a descriptor that is not a regular file or a block device (a pipe, a socket, a
	 * terminal, /dev/null...). */
	__u64 other_rbytes;
	__u64 other_wbytes;
	__u64 other_rcalls;
	__u64 other_wcalls;
	/* On a file whose phase could not be kept (the `fds` table or `lost_phases` full). */
	__u64 full_rbytes;
	__u64 full_wbytes;
	__u64 full_rcalls;
	__u64 full_wcalls;
	/* task->ioac at exit, summed over the process's threads. */
	__u64 rchar;
	__u64 wchar;
	__u64 syscr;
	__u64 syscw;
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 threads_exited;
};

struct file_key {
	__u32 dev;
	__u32 pad;
	__u64 ino;
};

struct file_stat {
	__u64 rcalls;
	__u64 wcalls;
	__u64 rbytes;
	__u64 wbytes;
	__u64 io_ns;
	__u64 misses;
	__u64 fsyncs;
	__u64 fsync_ns;
	__u64 closes;
};

struct blk_key {
	__u32 dev;
	__u8 dir;
	__u8 owner;
	__u16 pad;
};

struct blk_stat {
	__u64 completions;
	__u64 bytes;
	__u64 lat_ns;
	__u64 issues;
	__u64 queued;
	__u64 queue_ns;
	__u64 errors;
	__u64 depth_sum;
	__u64 size[L2_BUCKETS];
	__u64 depth[L2_BUCKETS];
	__u64 lat[LL_BUCKETS];
};

/* What is known of a request in flight, from its first event to its last completion:
 * which request (its address: blk-mq preallocates them, so an address names one request
 * at a time), its device and direction (read once, at its first event), its owner (decided
 * in the submitter's context) and its times. */
struct req_val {
	__u64 rq;
	__u64 issue_ns;
	__u32 dev;
	__u8 dir;
	__u8 owner;
	__u8 issued;
	__u8 pad;
	/* Bytes the device has still to complete: the request's length when it was first
	 * issued, less its partial completions. */
	__u32 left;
	/* The file the request moves data of, when the kernel says (0 otherwise): its
	 * filesystem's device (s_dev) and inode. See req_file. */
	__u32 fdev;
	__u64 ino;
};

/* The tree's block bytes per file, each request counted once, by the file whose data it
 * moved (`req_file`): what each file's phases are given as their storage bytes. */
struct blk_file_key {
	__u32 fdev;
	__u8 dir;
	__u8 pad[3];
	__u64 ino;
};

struct blk_file_stat {
	__u64 bytes;
	__u64 requests;
};

/* Requests live in an array indexed by a hash of their address: a request is found with
 * an inlined array lookup and claimed with one compare-and-swap, where a hash map insert
 * and delete per request cost several hundred nanoseconds. A request whose slot another
 * request in flight holds goes to the `reqs` hash instead. */
#define RQ_SLOTS_BITS 14
#define RQ_SLOTS (1 << RQ_SLOTS_BITS)

/* Maps. User space finds them by these names. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct sys_start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NSLOTS);
	__type(key, __u32);
	__type(value, struct sys_stat);
} sys_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct l2_hist);
} lseek_offsets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} cache_misses SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NDIAG);
	__type(key, __u32);
	__type(value, __u64);
} diag SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct fd_key);
	__type(value, struct phase);
} fds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct phase);
} phase_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} phases SEC(".maps");

/* Phases that found the ring buffer full, merged per process and file; user space reads
 * them at the end (entries are never removed, so a reading never races with a merge). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct lost_key);
	__type(value, struct phase);
} lost_phases SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct tree_io);
} tree_io SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct file_key);
	__type(value, struct file_stat);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct blk_key);
	__type(value, struct blk_stat);
} blk_stats SEC(".maps");

/* Never written: a zeroed value to create blk_stats entries from (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct blk_file_key);
	__type(value, struct blk_file_stat);
} blk_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct blk_stat);
} blk_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RQ_SLOTS);
	__type(key, __u32);
	__type(value, struct req_val);
} rq_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct req_val);
} reqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} inflight SEC(".maps");

/* An inode under writeback: its superblock's device and its number (`wb_key_of`). Inode
 * numbers repeat across filesystems: by number alone, another filesystem's inode 12 written
 * back while the set's inode 12 was marked was the set's. (Two filesystems on one disk,
 * partitions, share a backing device: the superblock's device tells them apart too.) */
struct wb_key {
	__u32 dev;
	__u32 pad;
	__u64 ino;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct wb_key);
	__type(value, __u8);
} wb_inodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct wb_key);
} wb_cur SEC(".maps");

/* Histogram buckets; the same arithmetic is in src/hist.rs. */
static __always_inline __u32 msb64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* log2: 0 -> 0, otherwise floor(log2 v) + 1 (so a power of two is its bucket's lower bound). */
static __always_inline __u32 l2_bucket(__u64 v)
{
	if (!v)
		return 0;
	__u32 b = msb64(v) + 1;
	return b > L2_BUCKETS - 1 ? L2_BUCKETS - 1 : b;
}

/* log-linear, 4 sub-buckets per power of two (at most 25% wide): values below 8 exact. */
static __always_inline __u32 ll_bucket(__u64 v)
{
	if (v < 8)
		return (__u32)v;
	__u32 m = msb64(v);
	__u32 b = (m - 1) * 4 + ((v >> (m - 2)) & 3);
	return b & (LL_BUCKETS - 1);
}

static __always_inline void diag_inc(__u32 which)
{
	__u64 *d = bpf_map_lookup_elem(&diag, &which);
	if (d)
		*d += 1;
}

/* SET_OWN, SET_JOB, or 0 for a process outside both. */
static __always_inline __u8 set_of(__u32 tgid)
{
	__u8 *v = bpf_map_lookup_elem(&tracked, &tgid);
	return v ? *v : 0;
}

static __always_inline int is_tracked_tgid(__u32 tgid)
{
	return set_of(tgid) == SET_OWN;
}

/* The set's generation: slot 0 moves whenever a program changes `tracked` (a fork into
 * the set, a member's exit), slot 1 whenever user space does. Array lookups with a constant
 * key are inlined by the verifier: reading both costs a few loads. */
#define GEN_BPF 0
#define GEN_USER 1
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} set_gen SEC(".maps");

static __always_inline void set_changed(void)
{
	__u32 k = GEN_BPF;
	__u64 *g = bpf_map_lookup_elem(&set_gen, &k);
	if (g)
		__sync_fetch_and_add(g, 1);
}

/* The last answer of set_of on this CPU for one calling program (`MEMO_*`: a program never
 * runs nested in itself on a CPU, so each has its slot and no memo is written half by
 * another), valid while neither generation has moved. A page added to the cache, a page
 * dirtied, a bio started: each happens hundreds of thousands of times a second from the
 * same process, which then pays a per-CPU read instead of a hash lookup. */
#define MEMO_CACHE_ADD 0
#define MEMO_DIRTY 1
#define MEMO_IO_START 2
#define MEMO_RQ_ISSUE 3
#define MEMO_SLOTS 4
struct set_memo {
	__u64 gen_bpf;
	__u64 gen_user;
	__u32 tgid;
	__u8 set;
	__u8 valid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MEMO_SLOTS);
	__type(key, __u32);
	__type(value, struct set_memo);
} set_memo SEC(".maps");

static __always_inline __u8 set_of_memo(__u32 tgid, __u32 slot)
{
	__u32 kb = GEN_BPF, ku = GEN_USER;
	__u64 *gb = bpf_map_lookup_elem(&set_gen, &kb);
	__u64 *gu = bpf_map_lookup_elem(&set_gen, &ku);
	struct set_memo *m = bpf_map_lookup_elem(&set_memo, &slot);
	if (!gb || !gu || !m)
		return set_of(tgid);
	/* The generations are read before the set: a change after this read moves them and
	 * the next call asks the set again. */
	__u64 b = *gb, u = *gu;
	if (m->valid && m->tgid == tgid && m->gen_bpf == b && m->gen_user == u)
		return m->set;
	__u8 set = set_of(tgid);
	m->gen_bpf = b;
	m->gen_user = u;
	m->tgid = tgid;
	m->set = set;
	m->valid = 1;
	return set;
}

static __always_inline int slot_of(__s32 nr)
{
	switch (nr) { /* x86_64 syscall numbers */
	case 0: return SLOT_READ;
	case 1: return SLOT_WRITE;
	case 17: return SLOT_PREAD64;
	case 18: return SLOT_PWRITE64;
	case 19: return SLOT_READV;
	case 20: return SLOT_WRITEV;
	case 295: return SLOT_PREADV;
	case 296: return SLOT_PWRITEV;
	case 327: return SLOT_PREADV2;
	case 328: return SLOT_PWRITEV2;
	case 8: return SLOT_LSEEK;
	case 74: return SLOT_FSYNC;
	case 75: return SLOT_FDATASYNC;
	case 257: return SLOT_OPENAT;
	case 3: return SLOT_CLOSE;
	case 426: return SLOT_IO_URING_ENTER;
	case 83: /* mkdir */
	case 258: return SLOT_MKDIR; /* mkdirat */
	case 84: return SLOT_RMDIR;
	case 87: /* unlink */
	case 263: return SLOT_UNLINK; /* unlinkat (AT_REMOVEDIR too) */
	case 4: /* stat */
	case 6: /* lstat */
	case 262: /* newfstatat */
	case 332: return SLOT_STAT; /* statx */
	case 82: /* rename */
	case 264: /* renameat */
	case 316: return SLOT_RENAME; /* renameat2 */
	case 85: /* creat */
	case 133: /* mknod */
	case 259: return SLOT_CREATE; /* mknodat */
	case 78: /* getdents */
	case 217: return SLOT_GETDENTS; /* getdents64 */
	case 326: return SLOT_COPY_FILE_RANGE;
	case 40: return SLOT_SENDFILE;
	case 275: return SLOT_SPLICE;
	case 209: return SLOT_IO_SUBMIT;
	case 208: /* io_getevents */
	case 333: return SLOT_IO_GETEVENTS; /* io_pgetevents */
	case 425: return SLOT_IO_URING_SETUP;
	}
	return -1;
}

static __always_inline int is_read_slot(__u32 s)
{
	return s == SLOT_READ || s == SLOT_PREAD64 || s == SLOT_READV || s == SLOT_PREADV ||
	       s == SLOT_PREADV2;
}

static __always_inline int is_write_slot(__u32 s)
{
	return s == SLOT_WRITE || s == SLOT_PWRITE64 || s == SLOT_WRITEV || s == SLOT_PWRITEV ||
	       s == SLOT_PWRITEV2;
}

/* The calls after the metadata ones whose result is a byte count. */
static __always_inline int is_byte_slot(__u32 s)
{
	return s >= SLOT_GETDENTS && s <= SLOT_SPLICE;
}

/* Calls that carry their own file offset as the 4th argument. */
static __always_inline int is_positional(__u32 s)
{
	return s == SLOT_PREAD64 || s == SLOT_PWRITE64 || s == SLOT_PREADV || s == SLOT_PWRITEV ||
	       s == SLOT_PREADV2 || s == SLOT_PWRITEV2;
}

/* fd -> (dev, inode) of the calling task, regular files and block devices only (for a block
 * device, dev is the device itself and *blk is set). */
static __always_inline int fd_inode(__u32 fd, __u32 *dev, __u64 *ino, __u32 *fflags, __u32 *blk)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct files_struct *files = 0;
	struct fdtable *fdt = 0;
	struct file **arr = 0;
	struct file *f = 0;
	struct inode *in = 0;
	struct super_block *sb = 0;
	unsigned int max_fds = 0;
	__u16 mode = 0;

	if (bpf_probe_read_kernel(&files, sizeof(files), &task->files) || !files)
		return -1;
	if (bpf_probe_read_kernel(&fdt, sizeof(fdt), &files->fdt) || !fdt)
		return -1;
	if (bpf_probe_read_kernel(&max_fds, sizeof(max_fds), &fdt->max_fds) || fd >= max_fds)
		return -1;
	if (bpf_probe_read_kernel(&arr, sizeof(arr), &fdt->fd) || !arr)
		return -1;
	if (bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]) || !f)
		return -1;
	if (bpf_probe_read_kernel(&in, sizeof(in), &f->f_inode) || !in)
		return -1;
	if (bpf_probe_read_kernel(fflags, sizeof(*fflags), &f->f_flags))
		return -1;
	if (bpf_probe_read_kernel(&mode, sizeof(mode), &in->i_mode))
		return -1;
	if ((mode & 0170000) == 0060000) {
		if (bpf_probe_read_kernel(ino, sizeof(*ino), &in->i_ino))
			return -1;
		if (bpf_probe_read_kernel(dev, sizeof(*dev), &in->i_rdev))
			return -1;
		*blk = 1;
		return 0;
	}
	if ((mode & 0170000) != 0100000)
		return -1;
	if (bpf_probe_read_kernel(ino, sizeof(*ino), &in->i_ino))
		return -1;
	if (bpf_probe_read_kernel(&sb, sizeof(sb), &in->i_sb) || !sb)
		return -1;
	if (bpf_probe_read_kernel(dev, sizeof(*dev), &sb->s_dev))
		return -1;
	return 0;
}

static __always_inline struct file_stat *file_stat_of(__u32 dev, __u64 ino)
{
	struct file_key k = { .dev = dev, .ino = ino };
	struct file_stat *s = bpf_map_lookup_elem(&files, &k);
	if (s)
		return s;
	struct file_stat z = {};
	bpf_map_update_elem(&files, &k, &z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&files, &k);
}

static __always_inline struct tree_io *tree_io_of(__u32 tgid)
{
	struct tree_io *t = bpf_map_lookup_elem(&tree_io, &tgid);
	if (t)
		return t;
	struct tree_io z = {};
	bpf_map_update_elem(&tree_io, &tgid, &z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&tree_io, &tgid);
}

/* A read or write of `bytes` that no phase holds: `full` when a table was full, else the
 * descriptor was not a file. */
static __always_inline void unattributed(__u32 tgid, int rd, __u64 bytes, int full)
{
	struct tree_io *t = tree_io_of(tgid);
	if (!t)
		return;
	if (full) {
		__sync_fetch_and_add(rd ? &t->full_rcalls : &t->full_wcalls, 1);
		__sync_fetch_and_add(rd ? &t->full_rbytes : &t->full_wbytes, bytes);
	} else {
		__sync_fetch_and_add(rd ? &t->other_rcalls : &t->other_wcalls, 1);
		__sync_fetch_and_add(rd ? &t->other_rbytes : &t->other_wbytes, bytes);
	}
}

/* *full is set when the descriptor is a file but the `fds` table had no room for it. */
static __always_inline struct phase *new_phase(__u32 tgid, __u32 fd, __u64 now,
					       const char *user_path, int *full)
{
	__u32 dev = 0, zero = 0, fflags = 0, blk = 0;
	__u64 ino = 0;
	*full = 0;
	if (fd_inode(fd, &dev, &ino, &fflags, &blk))
		return 0;
	struct phase *p = bpf_map_lookup_elem(&phase_scratch, &zero);
	if (!p)
		return 0;
	__builtin_memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	p->fd = fd;
	p->dev = dev;
	p->ino = ino;
	p->open_ns = now;
	if (user_path) {
		bpf_probe_read_user_str(p->path, sizeof(p->path), user_path);
		p->flags = PHASE_OPENED;
	}
	if (fflags & X86_O_DIRECT)
		p->flags |= PHASE_DIRECT;
	if (blk)
		p->flags |= PHASE_BLKDEV;
	file_stat_of(dev, ino);
	struct fd_key k = { .tgid = tgid, .fd = fd };
	if (bpf_map_update_elem(&fds, &k, p, BPF_ANY)) {
		diag_inc(DIAG_FDS_FULL);
		*full = 1;
		return 0;
	}
	return bpf_map_lookup_elem(&fds, &k);
}

/* The programs, by what they watch; each part uses the definitions above and those of the
 * parts before it. */
/* The saved user registers of a system call (x86_64 struct pt_regs, whose layout is
 * user-visible ABI), at their offsets. The syscall programs are typed raw tracepoints, so
 * each register is a plain load from the typed pointer instead of a helper call (about
 * 28 ns each). */
#define PT_REGS_R10 56
#define PT_REGS_R9 64
#define PT_REGS_R8 72
#define PT_REGS_DX 96
#define PT_REGS_SI 104
#define PT_REGS_DI 112
#define PT_REGS_ORIG_AX 120

static __always_inline __u64 reg(const void *regs, int off)
{
	return *(const __u64 *)((const char *)regs + off);
}

#include "process.bpf.h"
#include "syscalls.bpf.h"
#include "block.bpf.h"
#include "pagecache.bpf.h"
#include "channels.bpf.h"
