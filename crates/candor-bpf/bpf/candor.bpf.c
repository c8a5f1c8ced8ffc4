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
#define NDIAG 7

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
	__u64 insert_ns;
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

/* An inode under writeback: the device of its backing_dev_info (the disk its requests go
 * to, in the block programs' encoding, parsed from the tracepoint's "MAJ:MIN" name; 0 for
 * a name of another form) and its number. Inode numbers repeat across filesystems: by
 * number alone, another filesystem's inode 12 written back while the set's inode 12 was
 * marked was the set's. */
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

/* ---- process set ---- */

/* ---- recording (`candor audit --record`) ---- */

/* With `candor_record`, the syscall programs also hand user space one record per file-I/O
 * call of the tracked set (candor_record_self, candor's own process, left out), in order
 * per thread, through `rec_events`: the call's number, arguments, result, start and
 * duration, the paths it named, never the data. Nothing is kept for it at entry beyond
 * what the audit keeps (the start): at exit the saved user registers still hold the
 * call's number (orig_ax) and arguments (only ax has become the result), and the paths
 * are read from the caller's memory then. A record the ring buffer has no room for is
 * counted in `rec_lost`. (User space sizes `rec_events` down to one page when not
 * recording.) */
volatile const __u8 candor_record = 0;
volatile const __u32 candor_record_self = 0;

#define REC_PATH 256
/* A fork: nr is this value and args[0] the child's pid. */
#define REC_FORK 0xFFFF

/* One call, as user space reads it (crates/candor-bpf/src/record.rs, `RawCall`). */
struct rec_call {
	__u64 ts;
	__u64 dur;
	__s64 ret;
	__u64 args[6];
	/* stat family: st_size read from the caller's buffer at exit. */
	__u64 extra;
	__u32 tid;
	__u32 tgid;
	__u32 nr;
	/* 1: the paths follow (struct rec_path_call). */
	__u32 has_paths;
};

struct rec_path_call {
	struct rec_call c;
	char p1[REC_PATH];
	char p2[REC_PATH];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rec_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rec_lost SEC(".maps");

static __always_inline void rec_lost_one(void)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&rec_lost, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Which calls are recorded, and which of their arguments are paths (bit 0: the first
 * argument, bit 1: the second, bit 3: the fourth; 3 and 10 name two), 0 for none; -1 for
 * a call not recorded. */
static __always_inline int rec_paths_of(__s32 nr)
{
	switch (nr) { /* x86_64 syscall numbers */
	case 0: case 1: case 3: case 5: case 8: case 9: case 17: case 18: case 19: case 20:
	case 32: case 33: case 72: case 74: case 75: case 77: case 277: case 285: case 292:
	case 295: case 296: case 327: case 328: case 426:
		return 0;
	case 2: /* open */
	case 4: /* stat */
	case 6: /* lstat */
	case 83: /* mkdir */
	case 84: /* rmdir */
	case 85: /* creat */
	case 87: /* unlink */
		return 1;
	case 82: /* rename */
		return 3;
	case 257: /* openat */
	case 258: /* mkdirat */
	case 262: /* newfstatat */
	case 263: /* unlinkat */
		return 2;
	case 264: /* renameat */
	case 316: /* renameat2 */
		return 10;
	}
	return -1;
}

/* The saved user registers from r10 to orig_ax in one read (x86_64 struct pt_regs, whose
 * layout is user-visible ABI): r10, r9, r8, ax, cx, dx, si, di, orig_ax. */
#define REC_REGS_FROM 56
#define R_R10 0
#define R_R9 1
#define R_R8 2
#define R_DX 5
#define R_SI 6
#define R_DI 7
#define R_ORIG_AX 8

/* At a tracked call's exit: its record, when it is one the recording keeps. */
static __always_inline void record_call(const __u64 *ctx, __u64 id, __u64 start, __u64 lat,
					__s64 ret)
{
	__u32 tgid = id >> 32;
	if (tgid == candor_record_self)
		return;
	__u64 r[9] = {};
	bpf_probe_read_kernel(r, sizeof(r), (const char *)ctx[0] + REC_REGS_FROM);
	__s32 nr = (__s32)r[R_ORIG_AX];
	int paths = rec_paths_of(nr);
	if (paths < 0)
		return;
	struct rec_call c = {};
	c.ts = start;
	c.dur = lat;
	c.ret = ret;
	c.args[0] = r[R_DI];
	c.args[1] = r[R_SI];
	c.args[2] = r[R_DX];
	c.args[3] = r[R_R10];
	c.args[4] = r[R_R8];
	c.args[5] = r[R_R9];
	c.tid = (__u32)id;
	c.tgid = tgid;
	c.nr = nr;
	if (ret == 0) {
		/* The stat family: st_size, at offset 48 of struct stat. */
		if (nr == 5 || nr == 4 || nr == 6)
			bpf_probe_read_user(&c.extra, 8, (const char *)c.args[1] + 48);
		else if (nr == 262)
			bpf_probe_read_user(&c.extra, 8, (const char *)c.args[2] + 48);
	}
	if (!paths) {
		if (bpf_ringbuf_output(&rec_events, &c, sizeof(c), RB_NO_WAKEUP))
			rec_lost_one();
		return;
	}
	struct rec_path_call *p = bpf_ringbuf_reserve(&rec_events, sizeof(*p), 0);
	if (!p) {
		rec_lost_one();
		return;
	}
	c.has_paths = 1;
	p->c = c;
	p->p1[0] = 0;
	p->p2[0] = 0;
	if (paths & 1)
		bpf_probe_read_user_str(p->p1, REC_PATH, (const void *)c.args[0]);
	else if (paths & 2)
		bpf_probe_read_user_str(p->p1, REC_PATH, (const void *)c.args[1]);
	if (paths == 3)
		bpf_probe_read_user_str(p->p2, REC_PATH, (const void *)c.args[1]);
	else if (paths & 8)
		bpf_probe_read_user_str(p->p2, REC_PATH, (const void *)c.args[3]);
	bpf_ringbuf_submit(p, RB_NO_WAKEUP);
}

SEC("tracepoint/sched/sched_process_fork")
int candor_fork(void *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	__u8 set = set_of(parent);
	if (!set)
		return 0;
	__u32 child = 0;
	bpf_probe_read_kernel(&child, sizeof(child), (char *)ctx + 20);
	/* A child belongs where its parent does. */
	bpf_map_update_elem(&tracked, &child, &set, BPF_ANY);
	if (set != SET_OWN)
		return 0;
	/* Every tracked thread has an (idle) syscall slot: sys_enter needs no other lookup. */
	struct sys_start idle = {};
	bpf_map_update_elem(&starts, &child, &idle, BPF_NOEXIST);
	if (candor_record && parent != candor_record_self) {
		struct rec_call c = {};
		c.ts = bpf_ktime_get_ns();
		c.tid = (__u32)bpf_get_current_pid_tgid();
		c.tgid = parent;
		c.nr = REC_FORK;
		c.args[0] = child;
		if (bpf_ringbuf_output(&rec_events, &c, sizeof(c), RB_NO_WAKEUP))
			rec_lost_one();
	}
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int candor_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u8 group_dead = 0;
	bpf_probe_read_kernel(&group_dead, sizeof(group_dead), (char *)ctx + 32);
	if (candor_phases && is_tracked_tgid(tgid)) {
		/* The thread's own I/O counters, final now: summed per process, they are what
		 * /proc/PID/io showed for it (without its reaped children's). */
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		struct task_io_accounting io = {};
		bpf_probe_read_kernel(&io, sizeof(io), &task->ioac);
		struct tree_io *t = tree_io_of(tgid);
		if (t) {
			__sync_fetch_and_add(&t->rchar, io.rchar);
			__sync_fetch_and_add(&t->wchar, io.wchar);
			__sync_fetch_and_add(&t->syscr, io.syscr);
			__sync_fetch_and_add(&t->syscw, io.syscw);
			__sync_fetch_and_add(&t->read_bytes, io.read_bytes);
			__sync_fetch_and_add(&t->write_bytes, io.write_bytes);
			__sync_fetch_and_add(&t->threads_exited, 1);
		}
	}
	/* A thread's own id was added at clone; drop it so a later process reusing it is not
	 * tracked. The process itself leaves the set when its whole group is dead. */
	if (tid != tgid)
		bpf_map_delete_elem(&tracked, &tid);
	if (group_dead)
		bpf_map_delete_elem(&tracked, &tgid);
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

struct rename_ctx {
	__u64 common;
	__s32 pid;
	char oldcomm[16];
	char newcomm[16];
};

SEC("tracepoint/task/task_rename")
int candor_rename(struct rename_ctx *ctx)
{
	if (!candor_quiet_comm[0])
		return 0;
	__u32 tid = 0;
	char comm[16] = {};
	bpf_probe_read_kernel(&tid, sizeof(tid), &ctx->pid);
	if (!bpf_map_lookup_elem(&starts, &tid))
		return 0;
	bpf_probe_read_kernel(comm, sizeof(comm), ctx->newcomm);
	for (int i = 0; i < 16; i++) {
		if (comm[i] != candor_quiet_comm[i])
			return 0;
		if (!comm[i])
			break;
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

/* ---- syscalls ---- */

/* Syscalls are traced on the raw tracepoints raw_syscalls:sys_enter/sys_exit: a raw
 * tracepoint runs the program straight from the kernel's hook, without the copy into a
 * perf record that a classic tracepoint makes, which costs several hundred nanoseconds
 * per call. Arguments come from the saved user registers (x86_64 struct pt_regs, whose
 * layout is user-visible ABI). */
#define PT_REGS_R10 56
#define PT_REGS_DX 96
#define PT_REGS_SI 104
#define PT_REGS_DI 112

static __always_inline __u64 reg(const void *regs, int off)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), (const char *)regs + off);
	return v;
}

/* `starts` has one entry per tracked thread (made by user space for the threads that
 * exist when a process is added, by the fork program for later ones, removed at thread
 * exit), reused from call to call (ts = 0 when idle): its lookup is also the "is this
 * thread tracked" test, and an in-place write is much cheaper than a hash insert and
 * delete on every call. */
SEC("raw_tp/sys_enter")
int candor_sys_enter(__u64 *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sys_start *sp = bpf_map_lookup_elem(&starts, &tid);
	if (!sp)
		return 0;
	int slot = slot_of((__s32)ctx[1]);
	if (slot < 0) {
		__s32 nr = (__s32)ctx[1];
		/* fcntl(fd, F_SETFL, flags): followed for O_DIRECT, not counted. */
		if (nr == 72 && candor_phases) {
			const void *regs = (const void *)ctx[0];
			if (reg(regs, PT_REGS_SI) == F_SETFL) {
				sp->slot = SLOT_SETFL;
				sp->fd = (__u32)reg(regs, PT_REGS_DI);
				sp->arg = reg(regs, PT_REGS_DX);
				sp->ts = bpf_ktime_get_ns();
				return 0;
			}
		}
		/* A call only the recording keeps: its start, for its record at exit. */
		if (candor_record && rec_paths_of(nr) >= 0) {
			sp->slot = SLOT_RECORD;
			sp->ts = bpf_ktime_get_ns();
		}
		return 0;
	}
	if (slot == SLOT_UNLINK && (__s32)ctx[1] == 263) {
		/* unlinkat(dirfd, path, AT_REMOVEDIR) removes a directory: an rmdir. */
		if (reg((const void *)ctx[0], PT_REGS_DX) & AT_REMOVEDIR)
			slot = SLOT_RMDIR;
	}
	sp->slot = slot;
	if (slot == SLOT_OPENAT) {
		/* An open that may create: counted as a create too (its flags, the third argument). */
		const void *regs = (const void *)ctx[0];
		if (reg(regs, PT_REGS_DX) & X86_O_CREAT) {
			__u32 c = SLOT_CREATE;
			struct sys_stat *st = bpf_map_lookup_elem(&sys_stats, &c);
			if (st)
				st->count += 1;
		}
	}
	if (candor_phases) {
		const void *regs = (const void *)ctx[0];
		__u64 arg = 0;
		if (slot == SLOT_OPENAT)
			arg = reg(regs, PT_REGS_SI);
		else if (is_positional(slot))
			arg = reg(regs, PT_REGS_R10);
		sp->arg = arg;
		sp->fd = (__u32)reg(regs, PT_REGS_DI);
	}
	sp->ts = bpf_ktime_get_ns();
	return 0;
}

/* Do-nothing twins of the two syscall programs, attached only to measure what the kernel
 * itself charges every system call once a program sits on these tracepoints (the
 * overhead example's "empty" mode); candor never attaches them otherwise. */
SEC("raw_tp/sys_enter")
int candor_sys_enter_null(void *ctx)
{
	return 0;
}

SEC("raw_tp/sys_exit")
int candor_sys_exit_null(void *ctx)
{
	return 0;
}

/* The counting twin of the two syscall programs, attached alone on sys_exit for the length
 * of a test whose operations are system calls (copy, metadata: `Tracer::count_syscalls`).
 * Per slot it keeps the count, errors and bytes returned, no time and no phase: no clock
 * read and no second program per call. At exit the saved user registers still hold the
 * call's number (orig_ax) and arguments (only ax has become the result). */
#define PT_REGS_ORIG_AX 120

SEC("raw_tp/sys_exit")
int candor_sys_count(__u64 *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&starts, &tid))
		return 0;
	const void *regs = (const void *)ctx[0];
	__s32 nr = (__s32)reg(regs, PT_REGS_ORIG_AX);
	int s = slot_of(nr);
	if (s < 0)
		return 0;
	__u32 slot = s;
	if (slot == SLOT_OPENAT || nr == 263) {
		__u64 flags = reg(regs, PT_REGS_DX);
		if (slot == SLOT_OPENAT && (flags & X86_O_CREAT)) {
			__u32 c = SLOT_CREATE;
			struct sys_stat *cs = bpf_map_lookup_elem(&sys_stats, &c);
			if (cs)
				cs->count += 1;
		} else if (nr == 263 && (flags & AT_REMOVEDIR)) {
			slot = SLOT_RMDIR;
		}
	}
	struct sys_stat *st = bpf_map_lookup_elem(&sys_stats, &slot);
	if (!st)
		return 0;
	__s64 ret = (__s64)ctx[1];
	st->count += 1;
	if (ret < 0)
		st->errors += 1;
	else if (is_read_slot(slot) || is_write_slot(slot) || is_byte_slot(slot))
		st->bytes += ret;
	return 0;
}

/* A phase the ring buffer had no room for, merged into `lost_phases` (one record per
 * process and file until user space takes it). Its bytes are counted as unattributed
 * only when that table is full too. */
static __always_inline void merge_lost(struct phase *p)
{
	struct lost_key lk = { .tgid = p->tgid, .dev = p->dev, .ino = p->ino };
	struct phase *m = bpf_map_lookup_elem(&lost_phases, &lk);
	if (!m) {
		p->merged = 1;
		if (!bpf_map_update_elem(&lost_phases, &lk, p, BPF_NOEXIST)) {
			diag_inc(DIAG_PHASES_MERGED);
			return;
		}
		m = bpf_map_lookup_elem(&lost_phases, &lk);
		if (!m) {
			diag_inc(DIAG_PHASES_LOST);
			struct tree_io *t = tree_io_of(p->tgid);
			if (t) {
				__sync_fetch_and_add(&t->full_rcalls, p->rcalls);
				__sync_fetch_and_add(&t->full_wcalls, p->wcalls);
				__sync_fetch_and_add(&t->full_rbytes, p->rbytes);
				__sync_fetch_and_add(&t->full_wbytes, p->wbytes);
			}
			return;
		}
	}
	diag_inc(DIAG_PHASES_MERGED);
	m->flags |= PHASE_MERGED | (p->flags & (PHASE_DIRECT | PHASE_BLKDEV | PHASE_OPENED));
	if (p->open_ns < m->open_ns)
		m->open_ns = p->open_ns;
	if (p->first_ns && (!m->first_ns || p->first_ns < m->first_ns))
		m->first_ns = p->first_ns;
	if (p->last_ns > m->last_ns)
		m->last_ns = p->last_ns;
	if (p->close_ns > m->close_ns)
		m->close_ns = p->close_ns;
	if (!m->path[0])
		__builtin_memcpy(m->path, p->path, sizeof(m->path));
	__sync_fetch_and_add(&m->rbytes, p->rbytes);
	__sync_fetch_and_add(&m->wbytes, p->wbytes);
	__sync_fetch_and_add(&m->rcalls, p->rcalls);
	__sync_fetch_and_add(&m->wcalls, p->wcalls);
	__sync_fetch_and_add(&m->io_ns, p->io_ns);
	__sync_fetch_and_add(&m->rio_ns, p->rio_ns);
	__sync_fetch_and_add(&m->wio_ns, p->wio_ns);
	__sync_fetch_and_add(&m->fsyncs, p->fsyncs);
	__sync_fetch_and_add(&m->fsync_ns, p->fsync_ns);
	__sync_fetch_and_add(&m->lseeks, p->lseeks);
	__sync_fetch_and_add(&m->merged, 1);
	for (int i = 0; i < L2_BUCKETS; i++) {
		if (p->size_hist[i])
			__sync_fetch_and_add(&m->size_hist[i], p->size_hist[i]);
		if (p->off_hist[i])
			__sync_fetch_and_add(&m->off_hist[i], p->off_hist[i]);
	}
}

/* The per-file totals take a phase's counters when it ends; user space adds the phases
 * still open (see Snapshot::decode). */
static __always_inline void fold_into_file(struct phase *p)
{
	struct file_stat *fs = file_stat_of(p->dev, p->ino);
	if (fs) {
		__sync_fetch_and_add(&fs->rcalls, p->rcalls);
		__sync_fetch_and_add(&fs->wcalls, p->wcalls);
		__sync_fetch_and_add(&fs->rbytes, p->rbytes);
		__sync_fetch_and_add(&fs->wbytes, p->wbytes);
		__sync_fetch_and_add(&fs->io_ns, p->io_ns);
		__sync_fetch_and_add(&fs->fsyncs, p->fsyncs);
		__sync_fetch_and_add(&fs->fsync_ns, p->fsync_ns);
		__sync_fetch_and_add(&fs->closes, 1);
	}
}

static __always_inline void emit_phase(struct fd_key *k, struct phase *p, __u64 now)
{
	fold_into_file(p);
	p->close_ns = now;
	p->flags |= PHASE_CLOSED;
	if (bpf_ringbuf_output(&phases, p, sizeof(*p), RB_NO_WAKEUP))
		merge_lost(p);
	bpf_map_delete_elem(&fds, k);
}

/* Linux AIO's iocbs, at io_submit's exit, and the events io_getevents reaped (in the
 * asynchronous I/O section below). */
static __always_inline void aio_reaped_all(const void *regs, __u64 reaped, __u32 tgid);
static __always_inline void aio_submitted(const void *regs, __u64 accepted, __u32 tgid,
					  __u64 from, __u64 now);
/* fcntl(F_SETFL) changed O_DIRECT on a descriptor: a phase is in one mode, so the phase
 * so far ends here (as if closed) and the descriptor goes on in a new one from now. A
 * phase with no I/O yet only takes the new mode. */
static __always_inline void set_direct(struct phase *p, int direct, __u64 now)
{
	int was = (p->flags & PHASE_DIRECT) != 0;
	if (was == direct)
		return;
	if (p->rcalls || p->wcalls || p->fsyncs) {
		fold_into_file(p);
		__u32 flags = p->flags;
		p->close_ns = now;
		p->flags |= PHASE_CLOSED;
		if (bpf_ringbuf_output(&phases, p, sizeof(*p), RB_NO_WAKEUP))
			merge_lost(p);
		p->flags = flags;
		p->close_ns = 0;
		p->open_ns = now;
		p->first_ns = 0;
		p->last_ns = 0;
		p->rbytes = 0;
		p->wbytes = 0;
		p->rcalls = 0;
		p->wcalls = 0;
		p->io_ns = 0;
		p->rio_ns = 0;
		p->wio_ns = 0;
		p->fsyncs = 0;
		p->fsync_ns = 0;
		p->lseeks = 0;
		p->merged = 0;
		__builtin_memset(p->size_hist, 0, sizeof(p->size_hist));
		__builtin_memset(p->off_hist, 0, sizeof(p->off_hist));
	}
	if (direct)
		p->flags |= PHASE_DIRECT;
	else
		p->flags &= ~PHASE_DIRECT;
}

SEC("raw_tp/sys_exit")
int candor_sys_exit(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct sys_start *sp = bpf_map_lookup_elem(&starts, &tid);
	if (!sp || !sp->ts)
		return 0;
	struct sys_start s = *sp;
	sp->ts = 0;

	__u64 now = bpf_ktime_get_ns();
	__u64 lat = now - s.ts;
	__s64 ret = (__s64)ctx[1];
	__u32 slot = s.slot;
	if (candor_record)
		record_call(ctx, id, s.ts, lat, ret);
	if (slot == SLOT_SETFL) {
		if (ret < 0)
			return 0;
		struct fd_key k = { .tgid = tgid, .fd = s.fd };
		struct phase *p = bpf_map_lookup_elem(&fds, &k);
		int full = 0;
		if (p)
			set_direct(p, (s.arg & X86_O_DIRECT) != 0, now);
		else
			new_phase(tgid, s.fd, now, 0, &full);
		return 0;
	}
	if (slot >= NSLOTS)
		return 0;
	int rd = is_read_slot(slot), wr = is_write_slot(slot);

	struct sys_stat *st = bpf_map_lookup_elem(&sys_stats, &slot);
	if (st) {
		st->count += 1;
		st->time_ns += lat;
		if (ret < 0)
			st->errors += 1;
		else if (rd || wr || is_byte_slot(slot))
			st->bytes += ret;
		st->lat[ll_bucket(lat)] += 1;
	}
	if (slot == SLOT_IO_SUBMIT && ret > 0 && candor_phases)
		aio_submitted((const void *)ctx[0], ret, tgid, s.ts, now);
	if (slot == SLOT_IO_GETEVENTS && ret > 0 && candor_phases)
		aio_reaped_all((const void *)ctx[0], ret, tgid);
	if (ret < 0 || slot >= SLOT_FIRST_META)
		return 0;
	if (slot == SLOT_LSEEK) {
		__u32 zero = 0;
		struct l2_hist *h = bpf_map_lookup_elem(&lseek_offsets, &zero);
		if (h)
			h->b[l2_bucket(ret)] += 1;
	}
	if (slot == SLOT_IO_URING_ENTER || !candor_phases)
		return 0;
	int full = 0;
	if (slot == SLOT_OPENAT) {
		new_phase(tgid, (__u32)ret, now, (const char *)s.arg, &full);
		return 0;
	}
	struct fd_key k = { .tgid = tgid, .fd = s.fd };
	struct phase *p = bpf_map_lookup_elem(&fds, &k);
	if (slot == SLOT_CLOSE) {
		if (p)
			emit_phase(&k, p, now);
		return 0;
	}
	if (!p)
		p = new_phase(tgid, s.fd, s.ts, 0, &full);
	if (!p) {
		if (rd || wr)
			unattributed(tgid, rd, ret, full);
		return 0;
	}

	if (!p->first_ns)
		p->first_ns = s.ts;
	p->last_ns = now;
	if (rd || wr) {
		__u64 off = p->pos;
		if (is_positional(slot) && (__s64)s.arg >= 0)
			off = s.arg;
		else
			p->pos = off + ret;
		__sync_fetch_and_add(&p->io_ns, lat);
		__sync_fetch_and_add(&p->size_hist[l2_bucket(ret)], 1);
		__sync_fetch_and_add(&p->off_hist[l2_bucket(off)], 1);
		if (rd) {
			__sync_fetch_and_add(&p->rcalls, 1);
			__sync_fetch_and_add(&p->rbytes, ret);
			__sync_fetch_and_add(&p->rio_ns, lat);
		} else {
			__sync_fetch_and_add(&p->wcalls, 1);
			__sync_fetch_and_add(&p->wbytes, ret);
			__sync_fetch_and_add(&p->wio_ns, lat);
		}
	} else if (slot == SLOT_LSEEK) {
		__sync_fetch_and_add(&p->lseeks, 1);
		p->pos = ret;
	} else if (slot == SLOT_FSYNC || slot == SLOT_FDATASYNC) {
		__sync_fetch_and_add(&p->fsyncs, 1);
		__sync_fetch_and_add(&p->fsync_ns, lat);
	}
	return 0;
}

SEC("tracepoint/exceptions/page_fault_user")
int candor_page_fault(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!is_tracked_tgid(tgid))
		return 0;
	__u32 slot = SLOT_PAGE_FAULT;
	struct sys_stat *st = bpf_map_lookup_elem(&sys_stats, &slot);
	if (st)
		st->count += 1;
	return 0;
}

/* ---- block layer ---- */

/* The block programs are on raw tracepoints too (typed by BTF: tp_btf). Besides being
 * cheaper, this matters for exactness: the kernel skips a classic tracepoint program when
 * any other classic program is already running on the CPU, and a completion interrupt
 * arriving during one would then go uncounted. A raw tracepoint program is only skipped
 * when it interrupts itself (counted in its recursion misses, which the loader reads).
 * The request's fields are relocated through CO-RE (struct request, its queue's gendisk). */
struct rq_info {
	__u32 dev;
	__u8 dir;
	__u64 sector;
};

#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1
#define REQ_OP_DISCARD 3

static __always_inline __u8 owner_now(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u8 set = set_of(tgid);
	if (set == SET_OWN)
		return OWNER_TRACKED;
	if (set == SET_JOB)
		return OWNER_JOB;
	/* A flusher writing an inode back: the set's if the set dirtied it, the job's if
	 * another process of the job did, else someone else's data. */
	struct wb_key *wk = bpf_map_lookup_elem(&wb_cur, &tid);
	if (wk) {
		__u8 *by = bpf_map_lookup_elem(&wb_inodes, wk);
		if (!by)
			return OWNER_FOREIGN;
		return *by == SET_OWN ? OWNER_WRITEBACK : OWNER_JOB;
	}
	/* Any other kernel thread (a journal commit, filesystem housekeeping) works for the
	 * filesystem, not for a process: kept apart from the other processes' traffic. */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned int flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), &task->flags);
	if (flags & PF_KTHREAD)
		return OWNER_KERNEL;
	return OWNER_FOREIGN;
}

static __always_inline struct blk_stat *blk_stat_of(__u32 dev, __u8 dir, __u8 owner)
{
	struct blk_key k = { .dev = dev, .dir = dir, .owner = owner };
	struct blk_stat *s = bpf_map_lookup_elem(&blk_stats, &k);
	if (s)
		return s;
	__u32 zero = 0;
	struct blk_stat *z = bpf_map_lookup_elem(&blk_zero, &zero);
	if (!z)
		return 0;
	bpf_map_update_elem(&blk_stats, &k, z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&blk_stats, &k);
}

/* dir: 0 read, 1 write, 2 discard, 3 anything else (a flush, write-zeroes...). The block
 * programs are tp_btf programs: the request pointer is typed, so its fields are read with
 * plain loads (which the verifier turns into guarded reads) instead of one helper call
 * per field, which cost about 28 ns each here. */
static __always_inline int rq_info_btf(struct request *rq, struct rq_info *out)
{
	struct request_queue *q = rq->q;
	if (!q)
		return -1;
	struct gendisk *disk = q->disk;
	if (!disk)
		return -1;
	unsigned int flags = rq->cmd_flags;
	out->sector = rq->__sector;
	out->dev = ((__u32)disk->major << 20) | ((__u32)disk->first_minor & 0xfffff);
	switch (flags & REQ_OP_MASK) {
	case REQ_OP_READ: out->dir = 0; break;
	case REQ_OP_WRITE: out->dir = 1; break;
	case REQ_OP_DISCARD: out->dir = 2; break;
	default: out->dir = 3;
	}
	return 0;
}

#define PAGE_MAPPING_ANON 1

/* The file whose data the request moves, when the kernel says so (*ino stays 0 when not):
 * - a thread of the tree inside a read or write call on a regular file in O_DIRECT mode:
 *   that file (its bio pages are the program's buffer, which says nothing of the file);
 * - otherwise the owner of the first page of its first bio, when that page is in a regular
 *   file's page cache (buffered reads and readahead, writeback of dirty pages);
 * - otherwise none: anonymous pages (a buffer through AIO or io_uring in O_DIRECT mode),
 *   the block device's own cache (metadata, the journal).
 * Every read goes through bpf_probe_read_kernel: the page's mapping carries a flag in its
 * low bit, and a tail page of a large folio names its head, both plain numbers. */
static __always_inline void req_file(struct request *rqp, __u8 owner, __u32 *fdev, __u64 *ino)
{
	*fdev = 0;
	*ino = 0;
	/* Only the set's requests are counted per file, and only by the audit (phases on):
	 * `candor run` and other processes' requests pay nothing here. */
	if (!candor_phases || (owner != OWNER_TRACKED && owner != OWNER_WRITEBACK))
		return;
	if (owner == OWNER_TRACKED) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct sys_start *sp = bpf_map_lookup_elem(&starts, &tid);
		if (sp && sp->ts && (is_read_slot(sp->slot) || is_write_slot(sp->slot))) {
			__u32 d = 0, ff = 0, blk = 0;
			__u64 i = 0;
			if (!fd_inode(sp->fd, &d, &i, &ff, &blk) && !blk && (ff & X86_O_DIRECT)) {
				*fdev = d;
				*ino = i;
				return;
			}
		}
	}
	struct bio *bio = 0;
	struct bio_vec *bv = 0;
	struct page *pg = 0;
	unsigned long head = 0, mapping = 0;
	struct inode *host = 0;
	struct super_block *sb = 0;
	__u16 mode = 0;
	__u32 d = 0;
	__u64 i = 0;
	if (bpf_probe_read_kernel(&bio, sizeof(bio), &rqp->bio) || !bio)
		return;
	if (bpf_probe_read_kernel(&bv, sizeof(bv), &bio->bi_io_vec) || !bv)
		return;
	if (bpf_probe_read_kernel(&pg, sizeof(pg), &bv->bv_page) || !pg)
		return;
	if (bpf_probe_read_kernel(&head, sizeof(head), &pg->compound_head))
		return;
	if (head & 1)
		pg = (struct page *)(head - 1);
	if (bpf_probe_read_kernel(&mapping, sizeof(mapping), &pg->mapping) || !mapping ||
	    (mapping & PAGE_MAPPING_ANON))
		return;
	if (bpf_probe_read_kernel(&host, sizeof(host), &((struct address_space *)mapping)->host) ||
	    !host)
		return;
	if (bpf_probe_read_kernel(&mode, sizeof(mode), &host->i_mode) ||
	    (mode & 0170000) != 0100000)
		return;
	if (bpf_probe_read_kernel(&i, sizeof(i), &host->i_ino))
		return;
	if (bpf_probe_read_kernel(&sb, sizeof(sb), &host->i_sb) || !sb)
		return;
	if (bpf_probe_read_kernel(&d, sizeof(d), &sb->s_dev))
		return;
	*fdev = d;
	*ino = i;
}

/* Adds a completed part of a request to its file's count, when the request is the tree's
 * (its processes' or the writeback of pages they dirtied) and names a file. */
static __always_inline void file_blk_add(struct req_val *v, __u64 bytes)
{
	if (!v->ino || v->dir > 1 || (v->owner != OWNER_TRACKED && v->owner != OWNER_WRITEBACK))
		return;
	struct blk_file_key k = { .fdev = v->fdev, .dir = v->dir, .ino = v->ino };
	struct blk_file_stat *st = bpf_map_lookup_elem(&blk_files, &k);
	if (!st) {
		struct blk_file_stat z = {};
		bpf_map_update_elem(&blk_files, &k, &z, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&blk_files, &k);
		if (!st) {
			diag_inc(DIAG_BLK_FILES_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&st->bytes, bytes);
	__sync_fetch_and_add(&st->requests, 1);
}

/* A number naming the request: its address minus the (fixed) address of the slot array.
 * The verifier refuses to shift or hash a typed pointer, and to read a spilled pointer
 * back in halves, but lets a privileged program subtract two pointers, which gives a
 * plain number. No helper call, and nothing shared that an interrupt could overwrite. */
static __always_inline __u64 rq_addr(__u64 *ctx)
{
	__u32 zero = 0;
	char *base = bpf_map_lookup_elem(&rq_slots, &zero);
	if (!base)
		return 0;
	return (__u64)((char *)ctx[0] - base);
}

static __always_inline __u32 rq_index(__u64 rq)
{
	return (__u32)(((rq >> 6) * 0x9E3779B97F4A7C15ULL) >> (64 - RQ_SLOTS_BITS));
}

/* The record of request `rq`, or 0 when none was made. */
static __always_inline struct req_val *req_find(__u64 rq)
{
	__u32 i = rq_index(rq);
	struct req_val *s = bpf_map_lookup_elem(&rq_slots, &i);
	if (s && s->rq == rq)
		return s;
	return bpf_map_lookup_elem(&reqs, &rq);
}

static __always_inline void inflight_dec(__u32 dev)
{
	__u64 *inf = bpf_map_lookup_elem(&inflight, &dev);
	if (inf && *inf)
		__sync_fetch_and_add(inf, -1);
}

/* A record still marked issued when its request is used again means the kernel never ran
 * the completion program for it (on 6.18 it now and then does not, under CPU load: see
 * docs/bpf.md). blk-mq does not reuse a request before it has completed, so it did
 * complete: count it now, with the bytes it had left and without a latency, so that its
 * bytes are not missing from the owner's figures. */
static __always_inline void req_recover(struct req_val *old)
{
	if (!old->issued || old->dir == 3)
		return;
	old->issued = 0;
	inflight_dec(old->dev);
	struct blk_stat *st = blk_stat_of(old->dev, old->dir, old->owner);
	if (!st)
		return;
	__sync_fetch_and_add(&st->completions, 1);
	__sync_fetch_and_add(&st->bytes, old->left);
	__sync_fetch_and_add(&st->size[l2_bucket(old->left)], 1);
	file_blk_add(old, old->left);
	diag_inc(DIAG_COMPLETIONS_RECOVERED);
}

/* A fresh record for `rq` (replacing any it had), its owner decided now. */
static __always_inline struct req_val *req_new(__u64 rq, struct request *rqp)
{
	struct rq_info ri = {};
	if (rq_info_btf(rqp, &ri))
		return 0;
	__u8 owner = owner_now();
	__u32 fdev = 0;
	__u64 ino = 0;
	req_file(rqp, owner, &fdev, &ino);
	__u32 i = rq_index(rq);
	struct req_val *s = bpf_map_lookup_elem(&rq_slots, &i);
	if (s) {
		__u64 was = __sync_val_compare_and_swap(&s->rq, 0, rq);
		if (was == rq)
			req_recover(s);
		if (was == 0 || was == rq) {
			s->insert_ns = 0;
			s->issue_ns = 0;
			s->dev = ri.dev;
			s->dir = ri.dir;
			s->owner = owner;
			s->issued = 0;
			s->left = 0;
			s->fdev = fdev;
			s->ino = ino;
			return s;
		}
	}
	struct req_val *old = bpf_map_lookup_elem(&reqs, &rq);
	if (old)
		req_recover(old);
	struct req_val v = { .rq = rq, .dev = ri.dev, .dir = ri.dir, .owner = owner,
			     .fdev = fdev, .ino = ino };
	if (bpf_map_update_elem(&reqs, &rq, &v, BPF_ANY)) {
		diag_inc(DIAG_REQS_FULL);
		return 0;
	}
	return bpf_map_lookup_elem(&reqs, &rq);
}

static __always_inline struct req_val *req_of(__u64 *ctx)
{
	__u64 rq = rq_addr(ctx);
	struct req_val *v = req_find(rq);
	return v ? v : req_new(rq, (struct request *)ctx[0]);
}

/* The request enters the block layer in its submitter's context: decide its owner here. */
SEC("tp_btf/block_io_start")
int candor_io_start(__u64 *ctx)
{
	req_new(rq_addr(ctx), (struct request *)ctx[0]);
	return 0;
}

SEC("tp_btf/block_rq_insert")
int candor_rq_insert(__u64 *ctx)
{
	struct req_val *v = req_of(ctx);
	if (v)
		v->insert_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/block_rq_issue")
int candor_rq_issue(__u64 *ctx)
{
	struct request *rqp = (struct request *)ctx[0];
	struct req_val *v = req_of(ctx);
	if (!v)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	v->issue_ns = now;
	if (v->issued) {
		/* Issued again without a requeue: this is a new use of the request (one that
		 * did not pass block_io_start, such as a flush), and the record is the previous
		 * use's, whose completion went unseen. */
		struct rq_info ri = {};
		req_recover(v);
		if (rq_info_btf(rqp, &ri))
			return 0;
		v->dev = ri.dev;
		v->dir = ri.dir;
		v->owner = owner_now();
		req_file(rqp, v->owner, &v->fdev, &v->ino);
	}
	v->issued = 1;
	v->left = rqp->__data_len;
	__u32 dev = v->dev;
	__u64 *inf = bpf_map_lookup_elem(&inflight, &dev);
	if (!inf) {
		__u64 z = 0;
		bpf_map_update_elem(&inflight, &dev, &z, BPF_NOEXIST);
		inf = bpf_map_lookup_elem(&inflight, &dev);
		if (!inf)
			return 0;
	}
	/* Flushes and other dataless requests (dir 3) are left out of the in-flight count,
	 * as the kernel leaves them out of its own (/sys/.../inflight), which user space
	 * compares with this one to find completions the program never saw. */
	__u64 depth = v->dir == 3 ? *inf : __sync_fetch_and_add(inf, 1) + 1;
	struct blk_stat *s = blk_stat_of(dev, v->dir, v->owner);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->issues, 1);
	__sync_fetch_and_add(&s->depth_sum, depth);
	__sync_fetch_and_add(&s->depth[depth > L2_BUCKETS - 1 ? L2_BUCKETS - 1 : depth], 1);
	if (v->insert_ns && now >= v->insert_ns) {
		__sync_fetch_and_add(&s->queued, 1);
		__sync_fetch_and_add(&s->queue_ns, now - v->insert_ns);
	}
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int candor_rq_requeue(__u64 *ctx)
{
	struct req_val *v = req_find(rq_addr(ctx));
	if (v && v->issued) {
		v->issued = 0;
		if (v->dir != 3)
			inflight_dec(v->dev);
	}
	return 0;
}

/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes), called
 * before the request is updated: nr_bytes below the bytes it still has is a partial
 * completion, and the request stays in flight for the rest. */
SEC("tp_btf/block_rq_complete")
int candor_rq_complete(__u64 *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct request *rqp = (struct request *)ctx[0];
	__u64 rq = rq_addr(ctx);
	__u8 error = (__u8)ctx[1];
	__u64 bytes = (__u32)ctx[2];
	int last = bytes >= rqp->__data_len;
	struct req_val v = {};
	__u32 i = rq_index(rq);
	struct req_val *s = bpf_map_lookup_elem(&rq_slots, &i);
	if (s && s->rq == rq) {
		v = *s;
		if (last)
			__sync_lock_test_and_set(&s->rq, 0);
		else
			s->left = v.left > bytes ? v.left - bytes : 0;
	} else {
		struct req_val *h = bpf_map_lookup_elem(&reqs, &rq);
		if (h) {
			v = *h;
			if (last)
				bpf_map_delete_elem(&reqs, &rq);
			else
				h->left = v.left > bytes ? v.left - bytes : 0;
		} else {
			/* Never seen before (a request made before the tracer was attached):
			 * someone else's, as far as anyone can tell. */
			struct rq_info ri = {};
			if (rq_info_btf(rqp, &ri))
				return 0;
			v.dev = ri.dev;
			v.dir = ri.dir;
		}
	}
	if (v.issued && last && v.dir != 3)
		inflight_dec(v.dev);
	struct blk_stat *st = blk_stat_of(v.dev, v.dir, v.owner);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->completions, 1);
	__sync_fetch_and_add(&st->bytes, bytes);
	__sync_fetch_and_add(&st->size[l2_bucket(bytes)], 1);
	file_blk_add(&v, bytes);
	if (error)
		__sync_fetch_and_add(&st->errors, 1);
	if (v.issue_ns && now >= v.issue_ns) {
		__u64 lat = now - v.issue_ns;
		__sync_fetch_and_add(&st->lat_ns, lat);
		__sync_fetch_and_add(&st->lat[ll_bucket(lat)], 1);
	}
	return 0;
}

/* ---- page cache and writeback ---- */

struct add_to_cache_ctx {
	__u64 common;
	__u64 pfn;
	__u64 i_ino;
	__u64 index;
	__u32 s_dev;
	__u8 order;
};

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int candor_cache_add(struct add_to_cache_ctx *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 pages = 1ULL << (ctx->order & 15);
	struct file_key k = { .dev = ctx->s_dev, .ino = ctx->i_ino };
	struct file_stat *fs = bpf_map_lookup_elem(&files, &k);
	int count = is_tracked_tgid(tgid);
	if (fs) {
		__sync_fetch_and_add(&fs->misses, pages);
		count = 1;
	}
	if (count) {
		__u32 zero = 0;
		__u64 *m = bpf_map_lookup_elem(&cache_misses, &zero);
		if (m)
			*m += pages;
	}
	return 0;
}

struct wb_ctx {
	__u64 common;
	char name[32];
	__u64 ino;
};

/* The device a backing_dev_info's name gives ("7:2" -> major 7, minor 2, encoded as the
 * block programs' devices are), or 0 when the name is not "MAJ:MIN". */
static __always_inline __u32 bdi_dev(const char *from)
{
	char name[32] = {};
	/* Copied off the context first: a context may be read at constant offsets only. */
	if (bpf_probe_read_kernel(name, sizeof(name), from))
		return 0;
	__u32 major = 0, minor = 0, colon = 0, digits = 0;
	for (int i = 0; i < 32; i++) {
		char c = name[i];
		if (c == 0)
			break;
		if (c == ':' && !colon && digits) {
			colon = 1;
			digits = 0;
		} else if (c >= '0' && c <= '9') {
			if (colon)
				minor = minor * 10 + (c - '0');
			else
				major = major * 10 + (c - '0');
			digits++;
		} else {
			return 0;
		}
	}
	if (!colon || !digits)
		return 0;
	return (major << 20) | (minor & 0xfffff);
}

SEC("tracepoint/writeback/writeback_dirty_folio")
int candor_dirty_folio(struct wb_ctx *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 set = set_of(tgid);
	if (!set)
		return 0;
	struct wb_key k = { .dev = bdi_dev(ctx->name), .ino = ctx->ino };
	/* The set's own mark wins over the job's (a file both wrote: --shared-file). */
	__u8 *by = bpf_map_lookup_elem(&wb_inodes, &k);
	if (by && (*by == SET_OWN || *by == set))
		return 0;
	bpf_map_update_elem(&wb_inodes, &k, &set, BPF_ANY);
	return 0;
}

SEC("tracepoint/writeback/writeback_single_inode_start")
int candor_wb_start(struct wb_ctx *ctx)
{
	struct wb_key k = { .dev = bdi_dev(ctx->name), .ino = ctx->ino };
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&wb_cur, &tid, &k, BPF_ANY);
	return 0;
}

SEC("tracepoint/writeback/writeback_single_inode")
int candor_wb_end(struct wb_ctx *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&wb_cur, &tid);
	return 0;
}

/* ---- asynchronous and mapped I/O ---- */

/* Bytes that move without read or write calls, counted per process and file in
 * `chan_files` (one entry per process, file and channel, read by user space when the
 * audit ends; no event per I/O):
 * - Linux AIO: the iocbs io_submit accepted (its result says how many), read from the
 *   caller's memory at the call's exit, each counted at its submitted size on the file
 *   its descriptor names, then corrected to what completed when io_getevents reaps it
 *   (`aio_pending`, `aio_reaped`). At most AIO_BOUND iocbs per call are read (one bpf_loop); the
 *   rest are counted in `chan_lost` (calls, no bytes).
 * - io_uring: every completion of a read, write or fsync request on a ring the tracked set
 *   created, with the result the kernel posted (bytes moved), on the request's file
 *   (registered files included), whichever thread completed it (the submitter, an io-wq
 *   worker, an SQPOLL thread): the ring names the owner, not the completing thread.
 * - Mapped files: pages of a file made present in a tracked process's mappings by its
 *   page faults (the faulting page and the pages mapped around it), each page counted once
 *   per process and file; and folios a tracked thread dirtied outside any system call the
 *   tracer follows (a store through a shared mapping), in pages. A page read again through
 *   a mapping that holds it makes no event, so these are lower bounds. */
#define CHAN_AIO 1
#define CHAN_URING 2
#define CHAN_MMAP 3
#define NCHAN 4
#define AIO_BOUND 4096
#define AIO_IOV_BOUND 8
#define MPAGE_BOUND 64
#define PF_IO_WORKER 0x00000010

static long (*chan_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)112;

struct chan_key {
	__u32 tgid;
	__u32 dev;
	__u64 ino;
	__u32 chan;
	__u32 pad;
};

struct chan_stat {
	__u64 rbytes;
	__u64 wbytes;
	__u64 rcalls;
	__u64 wcalls;
	__u64 fsyncs;
	__u64 first_ns;
	__u64 last_ns;
	__u64 flags;
	__u32 size_hist[L2_BUCKETS];
};

/* What a channel moved that could not be given to a file: calls and the bytes known. */
struct chan_lost_stat {
	__u64 calls;
	__u64 bytes;
};

struct mpage_key {
	__u32 tgid;
	__u32 dev;
	__u64 ino;
	__u64 chunk;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct chan_key);
	__type(value, struct chan_stat);
} chan_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCHAN);
	__type(key, __u32);
	__type(value, struct chan_lost_stat);
} chan_lost SEC(".maps");

/* Linux AIO requests submitted and not yet reaped: (process, the iocb's address in the
 * process, which io_event.obj names) -> the file and direction it was counted on and the
 * size asked. At io_getevents' exit each reaped event's result (io_event.res: the bytes
 * moved, or a negative error) replaces the size asked. */
struct aio_key {
	__u32 tgid;
	__u32 pad;
	__u64 iocb;
};

struct aio_val {
	__u32 dev;
	__u32 dir;
	__u64 ino;
	__u64 size;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct aio_key);
	__type(value, struct aio_val);
} aio_pending SEC(".maps");

/* Never written: a zeroed value to create chan_files entries from (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chan_stat);
} chan_zero SEC(".maps");

/* io_uring rings the tracked set created: ring address -> tgid. LRU: rings are never
 * removed (no tracepoint marks a ring's end), so the oldest make room. */
#define BPF_MAP_TYPE_LRU_HASH 9
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} rings SEC(".maps");

/* io_uring requests of those rings in flight: request address -> submission time (the
 * start of a file's first counted request). LRU: a request never completed (cancelled
 * with its ring) is pushed out, not kept. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} uring_subs SEC(".maps");

/* Pages of a file already counted as mapped by a process: 64 pages a bit each. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct mpage_key);
	__type(value, __u64);
} mpages SEC(".maps");

struct io_cqe {
	__s32 res;
} __attribute__((preserve_access_index));

struct io_kiocb {
	struct file *file;
	__u8 opcode;
	struct io_cqe cqe;
	void *ctx;
} __attribute__((preserve_access_index));

struct folio {
	unsigned long _flags_1;
} __attribute__((preserve_access_index));

static __always_inline void chan_lost_add(__u32 chan, __u64 calls, __u64 bytes)
{
	struct chan_lost_stat *l = bpf_map_lookup_elem(&chan_lost, &chan);
	if (l) {
		l->calls += calls;
		l->bytes += bytes;
	}
}

/* (dev, inode, PHASE_* flags) of an inode: regular files and block devices only. */
static __always_inline int chan_inode(struct inode *in, __u32 *dev, __u64 *ino, __u32 *flags)
{
	struct super_block *sb = 0;
	__u16 mode = 0;
	if (!in || bpf_probe_read_kernel(&mode, sizeof(mode), &in->i_mode))
		return -1;
	if (bpf_probe_read_kernel(ino, sizeof(*ino), &in->i_ino))
		return -1;
	if ((mode & 0170000) == 0060000) {
		*flags |= PHASE_BLKDEV;
		return bpf_probe_read_kernel(dev, sizeof(*dev), &in->i_rdev) ? -1 : 0;
	}
	if ((mode & 0170000) != 0100000)
		return -1;
	if (bpf_probe_read_kernel(&sb, sizeof(sb), &in->i_sb) || !sb)
		return -1;
	return bpf_probe_read_kernel(dev, sizeof(*dev), &sb->s_dev) ? -1 : 0;
}

static __always_inline int chan_file(struct file *f, __u32 *dev, __u64 *ino, __u32 *flags)
{
	struct inode *in = 0;
	__u32 fflags = 0;
	if (!f || bpf_probe_read_kernel(&in, sizeof(in), &f->f_inode))
		return -1;
	bpf_probe_read_kernel(&fflags, sizeof(fflags), &f->f_flags);
	if (fflags & X86_O_DIRECT)
		*flags |= PHASE_DIRECT;
	return chan_inode(in, dev, ino, flags);
}

/* dir: 0 read, 1 write, 2 fsync. */
static __always_inline void chan_add(__u32 tgid, __u32 dev, __u64 ino, __u32 flags, __u32 chan,
				     __u32 dir, __u64 bytes, __u64 calls, __u64 from, __u64 now)
{
	struct chan_key k = { .tgid = tgid, .dev = dev, .ino = ino, .chan = chan };
	struct chan_stat *s = bpf_map_lookup_elem(&chan_files, &k);
	if (!s) {
		__u32 zero = 0;
		struct chan_stat *z = bpf_map_lookup_elem(&chan_zero, &zero);
		if (z)
			bpf_map_update_elem(&chan_files, &k, z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&chan_files, &k);
		if (!s) {
			chan_lost_add(chan, calls, dir < 2 ? bytes : 0);
			return;
		}
	}
	if (!s->first_ns || from < s->first_ns)
		s->first_ns = from;
	if (now > s->last_ns)
		s->last_ns = now;
	s->flags |= flags;
	if (dir == 0) {
		__sync_fetch_and_add(&s->rcalls, calls);
		__sync_fetch_and_add(&s->rbytes, bytes);
	} else if (dir == 1) {
		__sync_fetch_and_add(&s->wcalls, calls);
		__sync_fetch_and_add(&s->wbytes, bytes);
	} else {
		__sync_fetch_and_add(&s->fsyncs, calls);
		return;
	}
	if (chan != CHAN_MMAP)
		__sync_fetch_and_add(&s->size_hist[l2_bucket(bytes)], 1);
}

/* -- Linux AIO: called by candor_sys_exit at io_submit's exit with its result (the number
 * of iocbs the kernel accepted: the first `accepted` of the array). -- */

#define IOCB_CMD_PREAD 0
#define IOCB_CMD_PWRITE 1
#define IOCB_CMD_FSYNC 2
#define IOCB_CMD_FDSYNC 3
#define IOCB_CMD_PREADV 7
#define IOCB_CMD_PWRITEV 8

/* The fields of struct iocb read (include/uapi/linux/aio_abi.h, little-endian). */
struct chan_iocb {
	__u64 aio_data;
	__u32 aio_key;
	__u32 aio_rw_flags;
	__u16 aio_lio_opcode;
	__u16 aio_reqprio;
	__u32 aio_fildes;
	__u64 aio_buf;
	__u64 aio_nbytes;
	__s64 aio_offset;
};

struct chan_iovec {
	__u64 base;
	__u64 len;
};

static long (*chan_bpf_loop)(__u32 nr_loops, void *callback_fn, void *callback_ctx,
			     __u64 flags) = (void *)181;

struct aio_loop {
	const __u64 *iocbpp;
	__u64 from;
	__u64 now;
	__u32 tgid;
};

/* One iocb of the array (bpf_loop's callback: verified once, whatever the bound). */
static long aio_one(__u32 i, void *data)
{
	struct aio_loop *lc = data;
	__u64 p = 0;
	struct chan_iocb cb = {};
	if (chan_probe_read_user(&p, sizeof(p), &lc->iocbpp[i & (AIO_BOUND - 1)]) || !p ||
	    chan_probe_read_user(&cb, sizeof(cb), (const void *)p)) {
		chan_lost_add(CHAN_AIO, 1, 0);
		return 0;
	}
	__u32 op = cb.aio_lio_opcode, dir;
	__u64 bytes = cb.aio_nbytes;
	switch (op) {
	case IOCB_CMD_PREAD: dir = 0; break;
	case IOCB_CMD_PWRITE: dir = 1; break;
	case IOCB_CMD_PREADV: dir = 0; break;
	case IOCB_CMD_PWRITEV: dir = 1; break;
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC: dir = 2; bytes = 0; break;
	default: return 0; /* poll, noop: no data */
	}
	if (op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV) {
		/* aio_buf is an iovec array, aio_nbytes its length. */
		__u64 cnt = cb.aio_nbytes;
		bytes = 0;
		for (int j = 0; j < AIO_IOV_BOUND; j++) {
			struct chan_iovec v = {};
			if (j >= cnt)
				break;
			if (chan_probe_read_user(&v, sizeof(v),
						 (const void *)(cb.aio_buf + j * sizeof(v))))
				break;
			bytes += v.len;
		}
		if (cnt > AIO_IOV_BOUND) {
			/* Longer vectors: the call is counted, not given to the file. */
			chan_lost_add(CHAN_AIO, 1, bytes);
			return 0;
		}
	}
	__u32 dev = 0, fflags = 0, blk = 0, flags = 0;
	__u64 ino = 0;
	if (fd_inode(cb.aio_fildes, &dev, &ino, &fflags, &blk)) {
		if (dir < 2)
			chan_lost_add(CHAN_AIO, 1, bytes);
		return 0;
	}
	if (fflags & X86_O_DIRECT)
		flags |= PHASE_DIRECT;
	if (blk)
		flags |= PHASE_BLKDEV;
	chan_add(lc->tgid, dev, ino, flags, CHAN_AIO, dir, bytes, 1, lc->from, lc->now);
	if (dir < 2 && bytes) {
		struct aio_key ak = { .tgid = lc->tgid, .iocb = p };
		struct aio_val av = { .dev = dev, .dir = dir, .ino = ino, .size = bytes };
		bpf_map_update_elem(&aio_pending, &ak, &av, BPF_ANY);
	}
	return 0;
}

/* The fields of struct io_event (include/uapi/linux/aio_abi.h). */
struct chan_io_event {
	__u64 data;
	__u64 obj;
	__s64 res;
	__s64 res2;
};

struct aio_reap {
	__u64 events;
	__u32 tgid;
};

/* One reaped event (bpf_loop's callback): a request that moved less than it asked (short,
 * past the end of the file, failed) takes the difference off its file's bytes. */
static long aio_reaped(__u32 i, void *data)
{
	struct aio_reap *rc = data;
	struct chan_io_event ev = {};
	if (chan_probe_read_user(&ev, sizeof(ev),
				 (const void *)(rc->events + (__u64)(i & (AIO_BOUND - 1)) * sizeof(ev))))
		return 0;
	struct aio_key ak = { .tgid = rc->tgid, .iocb = ev.obj };
	struct aio_val *av = bpf_map_lookup_elem(&aio_pending, &ak);
	if (!av)
		return 0;
	__u64 got = ev.res > 0 ? (__u64)ev.res : 0;
	if (got < av->size) {
		struct chan_key k = { .tgid = rc->tgid, .dev = av->dev, .ino = av->ino,
				      .chan = CHAN_AIO };
		struct chan_stat *s = bpf_map_lookup_elem(&chan_files, &k);
		if (s) {
			__u64 less = av->size - got;
			if (av->dir == 0)
				__sync_fetch_and_add(&s->rbytes, -less);
			else
				__sync_fetch_and_add(&s->wbytes, -less);
		}
	}
	bpf_map_delete_elem(&aio_pending, &ak);
	return 0;
}

/* io_getevents(ctx, min_nr, nr, events, timeout) and io_pgetevents (the same first four
 * arguments) returned `reaped` events into `events`, the fourth argument (r10). */
static __always_inline void aio_reaped_all(const void *regs, __u64 reaped, __u32 tgid)
{
	struct aio_reap rc = { .events = reg(regs, PT_REGS_R10), .tgid = tgid };
	chan_bpf_loop(reaped > AIO_BOUND ? AIO_BOUND : reaped, aio_reaped, &rc, 0);
}

static __always_inline void aio_submitted(const void *regs, __u64 accepted, __u32 tgid,
					  __u64 from, __u64 now)
{
	struct aio_loop lc = {
		.iocbpp = (const __u64 *)reg(regs, PT_REGS_DX),
		.from = from,
		.now = now,
		.tgid = tgid,
	};
	__u32 n = accepted > AIO_BOUND ? AIO_BOUND : accepted;
	if (accepted > AIO_BOUND)
		chan_lost_add(CHAN_AIO, accepted - AIO_BOUND, 0);
	chan_bpf_loop(n, aio_one, &lc, 0);
}

/* -- io_uring -- */

#define IORING_OP_READV 1
#define IORING_OP_WRITEV 2
#define IORING_OP_FSYNC 3
#define IORING_OP_READ_FIXED 4
#define IORING_OP_WRITE_FIXED 5
#define IORING_OP_READ 22
#define IORING_OP_WRITE 23
#define IORING_OP_READV_FIXED 60
#define IORING_OP_WRITEV_FIXED 61

/* io_uring_create(int fd, void *ctx, u32 sq_entries, u32 cq_entries, u32 flags): runs
 * in the creating task. */
SEC("tp_btf/io_uring_create")
int candor_uring_create(__u64 *ctx)
{
	if (!candor_phases)
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!is_tracked_tgid(tgid))
		return 0;
	__u64 ring = 0;
	bpf_probe_read_kernel(&ring, sizeof(ring), &ctx[1]);
	bpf_map_update_elem(&rings, &ring, &tgid, BPF_ANY);
	return 0;
}

/* io_uring_submit_req(struct io_kiocb *req): a request taken from the ring, in the
 * submitting task (or the ring's SQPOLL thread). */
SEC("tp_btf/io_uring_submit_req")
int candor_uring_submit(__u64 *ctx)
{
	if (!candor_phases)
		return 0;
	struct io_kiocb *req = 0;
	bpf_probe_read_kernel(&req, sizeof(req), &ctx[0]);
	__u64 ring = 0;
	if (!req || bpf_probe_read_kernel(&ring, sizeof(ring), &req->ctx))
		return 0;
	if (!bpf_map_lookup_elem(&rings, &ring))
		return 0;
	__u64 key = (__u64)req, now = bpf_ktime_get_ns();
	bpf_map_update_elem(&uring_subs, &key, &now, BPF_ANY);
	return 0;
}

/* io_uring_complete(struct io_ring_ctx *ctx, void *req, struct io_uring_cqe *cqe): a
 * request's result posted, in whichever task completes it. */
SEC("tp_btf/io_uring_complete")
int candor_uring_complete(__u64 *ctx)
{
	if (!candor_phases)
		return 0;
	__u64 ring = 0;
	bpf_probe_read_kernel(&ring, sizeof(ring), &ctx[0]);
	__u32 *owner = bpf_map_lookup_elem(&rings, &ring);
	if (!owner)
		return 0;
	__u32 tgid = *owner;
	struct io_kiocb *req = 0;
	bpf_probe_read_kernel(&req, sizeof(req), &ctx[1]);
	if (!req)
		return 0;
	__u8 op = 0;
	__s32 res = 0;
	struct file *f = 0;
	bpf_probe_read_kernel(&op, sizeof(op), &req->opcode);
	__u32 dir;
	switch (op) {
	case IORING_OP_READV:
	case IORING_OP_READ_FIXED:
	case IORING_OP_READ:
	case IORING_OP_READV_FIXED: dir = 0; break;
	case IORING_OP_WRITEV:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_WRITE:
	case IORING_OP_WRITEV_FIXED: dir = 1; break;
	case IORING_OP_FSYNC: dir = 2; break;
	default: return 0;
	}
	bpf_probe_read_kernel(&res, sizeof(res), &req->cqe.res);
	if (res < 0)
		return 0;
	bpf_probe_read_kernel(&f, sizeof(f), &req->file);
	__u32 dev = 0, flags = 0;
	__u64 ino = 0, now = bpf_ktime_get_ns(), from = now, key = (__u64)req;
	__u64 *sub = bpf_map_lookup_elem(&uring_subs, &key);
	if (sub) {
		if (*sub && *sub <= now)
			from = *sub;
		bpf_map_delete_elem(&uring_subs, &key);
	}
	if (chan_file(f, &dev, &ino, &flags)) {
		if (!f && dir < 2)
			chan_lost_add(CHAN_URING, 1, res);
		return 0;
	}
	chan_add(tgid, dev, ino, flags, CHAN_URING, dir, dir < 2 ? (__u64)res : 0, 1, from, now);
	return 0;
}

/* -- mapped files -- */

/* Pages start..start+n-1 of a file newly present in the process's mappings (not counted
 * before for this process and file). A range of at most 64 pages spans two 64-page
 * chunks: one bitmap update each. Longer ranges (a fault-around window is 16 pages) are
 * counted in full, without the check. */
static __always_inline __u64 mpages_new(__u32 tgid, __u32 dev, __u64 ino, __u64 start, __u64 n)
{
	if (n > MPAGE_BOUND)
		return n;
	__u64 last = start + n - 1, fresh = 0;
	struct mpage_key k = { .tgid = tgid, .dev = dev, .ino = ino };
	for (int c = 0; c < 2; c++) {
		__u64 chunk = (start >> 6) + c;
		if (chunk > (last >> 6))
			break;
		__u64 lo = chunk == (start >> 6) ? (start & 63) : 0;
		__u64 hi = chunk == (last >> 6) ? (last & 63) : 63;
		__u64 mask = (hi == 63 ? ~0ULL : ((1ULL << (hi + 1)) - 1)) & ~((1ULL << lo) - 1);
		k.chunk = chunk;
		__u64 *bits = bpf_map_lookup_elem(&mpages, &k);
		if (!bits) {
			__u64 z = 0;
			bpf_map_update_elem(&mpages, &k, &z, BPF_NOEXIST);
			bits = bpf_map_lookup_elem(&mpages, &k);
		}
		if (!bits) {
			/* The table is full: counted, not deduplicated. */
			fresh += hi - lo + 1;
			continue;
		}
		__u64 was = __sync_fetch_and_or(bits, mask);
		fresh += __builtin_popcountll(mask & ~was);
	}
	return fresh;
}

static __always_inline void mapped_read(struct address_space *mapping, __u64 start, __u64 n)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!is_tracked_tgid(tgid))
		return;
	struct inode *in = 0;
	__u32 dev = 0, flags = 0;
	__u64 ino = 0;
	if (bpf_probe_read_kernel(&in, sizeof(in), &mapping->host) || chan_inode(in, &dev, &ino, &flags))
		return;
	__u64 fresh = mpages_new(tgid, dev, ino, start, n);
	if (!fresh)
		return;
	__u64 now = bpf_ktime_get_ns();
	chan_add(tgid, dev, ino, flags, CHAN_MMAP, 0, fresh * 4096, 1, now, now);
}

/* mm_filemap_map_pages(mapping, start_pgoff, end_pgoff): pages around a fault mapped from
 * the page cache (those already present are skipped by the kernel and by mpages). */
SEC("tp_btf/mm_filemap_map_pages")
int candor_map_pages(__u64 *ctx)
{
	if (!candor_phases)
		return 0;
	__u64 start = ctx[1], last = ctx[2];
	if (last < start)
		return 0;
	mapped_read((struct address_space *)ctx[0], start, last - start + 1);
	return 0;
}

/* mm_filemap_fault(mapping, index): the faulting page itself, read in if needed. */
SEC("tp_btf/mm_filemap_fault")
int candor_map_fault(__u64 *ctx)
{
	if (!candor_phases)
		return 0;
	mapped_read((struct address_space *)ctx[0], ctx[1], 1);
	return 0;
}

/* writeback_dirty_folio(folio, mapping): a folio made dirty. A tracked thread outside any
 * call the tracer follows (so not in a write, io_submit or io_uring_enter) and not an
 * io-wq worker dirties it by a store through a shared mapping. */
SEC("tp_btf/writeback_dirty_folio")
int candor_map_dirty(__u64 *ctx)
{
	if (!candor_phases)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (!is_tracked_tgid(tgid))
		return 0;
	struct sys_start *sp = bpf_map_lookup_elem(&starts, &tid);
	if (!sp || sp->ts)
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned int tflags = 0;
	bpf_probe_read_kernel(&tflags, sizeof(tflags), &task->flags);
	if (tflags & (PF_IO_WORKER | PF_KTHREAD))
		return 0;
	struct folio *folio = 0;
	struct address_space *mapping = 0;
	bpf_probe_read_kernel(&folio, sizeof(folio), &ctx[0]);
	bpf_probe_read_kernel(&mapping, sizeof(mapping), &ctx[1]);
	if (!folio || !mapping)
		return 0;
	/* A large folio (PG_head in the first word of flags) keeps its order in _flags_1. */
	unsigned long f0 = 0, f1 = 0;
	__u64 pages = 1;
	bpf_probe_read_kernel(&f0, sizeof(f0), folio);
	if (f0 & (1UL << 6)) {
		bpf_probe_read_kernel(&f1, sizeof(f1), &folio->_flags_1);
		pages = 1ULL << (f1 & 15);
	}
	struct inode *in = 0;
	__u32 dev = 0, flags = 0;
	__u64 ino = 0;
	if (bpf_probe_read_kernel(&in, sizeof(in), &mapping->host) || chan_inode(in, &dev, &ino, &flags))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	chan_add(tgid, dev, ino, flags, CHAN_MMAP, 1, pages * 4096, 1, now, now);
	return 0;
}
