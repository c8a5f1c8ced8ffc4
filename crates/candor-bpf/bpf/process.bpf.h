// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): The tracked process set (forks, exits, renames) and the recording of `candor audit --record`. */

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
/* Pages of a mapped file a tracked process faulted in (read) or dirtied through a shared
 * mapping (write): nr is this value, args[0] the file's device (its superblock's, kernel
 * encoding), args[1] its inode, args[2] the first page's index, args[3] the pages, args[4]
 * 1 for a write. */
#define REC_MAPPED 0xFFFE
/* An io_uring request of a tracked ring, at its completion (uring_record_done). */
#define REC_URING 0xFFFD

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
 * argument, bit 1: the second, bit 2: the third, bit 3: the fourth; 3, 5 and 10 name two),
 * 0 for none; -1 for a call not recorded. */
static __always_inline int rec_paths_of(__s32 nr)
{
	switch (nr) { /* x86_64 syscall numbers */
	case 0: case 1: case 3: case 5: case 8: case 9: case 17: case 18: case 19: case 20:
	case 32: case 33: case 72: case 74: case 75: case 77: case 277: case 285: case 292:
	case 295: case 296: case 327: case 328: case 426:
	case 78: case 217: /* getdents, getdents64 */
	case 221: /* fadvise64 */
	case 187: /* readahead */
	case 162: case 306: /* sync, syncfs */
	case 81: /* fchdir: the directory relative paths start from */
	/* Copies the kernel makes between descriptors (sendfile, splice, copy_file_range):
	 * kept as the reads and writes they stand for (their offsets read at exit). */
	case 40: case 275: case 326:
		return 0;
	case 2: /* open */
	case 4: /* stat */
	case 80: /* chdir */
	case 6: /* lstat */
	case 83: /* mkdir */
	case 84: /* rmdir */
	case 85: /* creat */
	case 87: /* unlink */
	case 76: /* truncate */
		return 1;
	case 82: /* rename */
	case 86: /* link */
	case 88: /* symlink */
		return 3;
	case 266: /* symlinkat(target, newdirfd, linkpath) */
		return 5;
	case 257: /* openat */
	case 437: /* openat2: its flags are read from its struct open_how */
	case 258: /* mkdirat */
	case 262: /* newfstatat */
	case 263: /* unlinkat */
	case 332: /* statx */
		return 2;
	case 264: /* renameat */
	case 316: /* renameat2 */
	case 265: /* linkat */
		return 10;
	}
	return -1;
}

/* At a tracked call's exit: its record, when it is one the recording keeps. */
static __always_inline void record_call(const __u64 *ctx, __u64 id, __u64 start, __u64 lat,
					__s64 ret)
{
	__u32 tgid = id >> 32;
	if (tgid == candor_record_self)
		return;
	const void *regs = (const void *)ctx[0];
	__s32 nr = (__s32)reg(regs, PT_REGS_ORIG_AX);
	int paths = rec_paths_of(nr);
	if (paths < 0)
		return;
	struct rec_call c = {};
	c.ts = start;
	c.dur = lat;
	c.ret = ret;
	c.args[0] = reg(regs, PT_REGS_DI);
	c.args[1] = reg(regs, PT_REGS_SI);
	c.args[2] = reg(regs, PT_REGS_DX);
	c.args[3] = reg(regs, PT_REGS_R10);
	c.args[4] = reg(regs, PT_REGS_R8);
	c.args[5] = reg(regs, PT_REGS_R9);
	c.tid = (__u32)id;
	c.tgid = tgid;
	c.nr = nr;
	/* mmap of a file: the file's device in args[0] (the address hint, not needed) and its
	 * inode in extra, which the pages faulted through the mapping are named by. */
	if (nr == 9 && ret >= 0 && (__s32)c.args[4] >= 0) {
		__u32 d = 0, ff = 0, blk = 0;
		__u64 i = 0;
		if (!fd_inode((__u32)c.args[4], &d, &i, &ff, &blk)) {
			c.args[0] = d;
			c.extra = i;
		}
	}
	/* openat2(dirfd, path, how, size): the open flags, the first field of *how. */
	if (nr == 437)
		bpf_probe_read_user(&c.extra, 8, (const void *)c.args[2]);
	if (ret == 0) {
		/* The stat family: st_size, at offset 48 of struct stat. */
		if (nr == 5 || nr == 4 || nr == 6)
			bpf_probe_read_user(&c.extra, 8, (const char *)c.args[1] + 48);
		else if (nr == 262)
			bpf_probe_read_user(&c.extra, 8, (const char *)c.args[2] + 48);
		/* statx: stx_size, at offset 40 of struct statx (its fifth argument). */
		else if (nr == 332)
			bpf_probe_read_user(&c.extra, 8, (const char *)c.args[4] + 40);
	}
	/* Copies at offsets handed by pointer: the offsets as the call left them (where it
	 * began plus the bytes it moved), for copy_file_range and splice the source's in
	 * extra and the destination's in args[5] (their flags, not needed), for sendfile the
	 * source's in extra. User space subtracts the bytes moved. */
	if (ret > 0) {
		if (nr == 326 || nr == 275) {
			if (c.args[1])
				bpf_probe_read_user(&c.extra, 8, (const void *)c.args[1]);
			if (c.args[3])
				bpf_probe_read_user(&c.args[5], 8, (const void *)c.args[3]);
		} else if (nr == 40 && c.args[2]) {
			bpf_probe_read_user(&c.extra, 8, (const void *)c.args[2]);
		}
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
	else if (paths & 4)
		bpf_probe_read_user_str(p->p2, REC_PATH, (const void *)c.args[2]);
	else if (paths & 8)
		bpf_probe_read_user_str(p->p2, REC_PATH, (const void *)c.args[3]);
	bpf_ringbuf_submit(p, RB_NO_WAKEUP);
}

/* The process set's events are raw tracepoints typed by BTF, like the block programs: a
 * classic tracepoint program is skipped whenever the CPU's bpf_prog_active count is up,
 * which a BPF map system call of another task holds up while it is preempted (it only
 * disables migration); a fork missed that way would leave the child out of the set. A raw
 * tracepoint program is only skipped when it would run nested in itself. */

/* sched_process_fork(struct task_struct *parent, struct task_struct *child). */
SEC("tp_btf/sched_process_fork")
int candor_fork(__u64 *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	__u8 set = set_of(parent);
	if (!set)
		return 0;
	struct task_struct *ct = (struct task_struct *)ctx[1];
	__u32 child = ct->pid;
	/* A child belongs where its parent does. */
	bpf_map_update_elem(&tracked, &child, &set, BPF_ANY);
	set_changed();
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

/* sched_process_exit(struct task_struct *p, bool group_dead), in the exiting thread. */
SEC("tp_btf/sched_process_exit")
int candor_exit(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u8 group_dead = (__u8)ctx[1];
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
	if (tid != tgid && bpf_map_delete_elem(&tracked, &tid) == 0)
		set_changed();
	if (group_dead) {
		/* Out of the set first: a reader that sees the count move finds it gone. */
		int own = candor_phases && is_tracked_tgid(tgid);
		if (bpf_map_delete_elem(&tracked, &tgid) == 0)
			set_changed();
		if (own)
			diag_inc(DIAG_SET_EXITS);
	}
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
