// SPDX-License-Identifier: MIT OR GPL-2.0
/* The recorder of `candor audit --record`: one compact record per file-I/O system call of
 * a process tree, in order, handed to user space through a ring buffer (never the data).
 * Separate from candor.bpf.c, which aggregates in the kernel: this program streams.
 *
 * The tree: processes whose tgid is in `rec_tracked` (user space seeds it with its own pid;
 * the fork program adds every child), except `rec_self` (candor itself), whose calls are
 * never recorded. A call's arguments and paths are written at entry in the thread's entry
 * of `rec_pending`; at exit the record goes to the ring buffer, or, when it is full,
 * `rec_lost` counts it and the trace says it is incomplete. */

#include "candor_bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define REC_PATH 256

static long (*rec_read_user)(void *dst, __u32 size, const void *src) = (void *)112;

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

/* Set by user space before load: candor's own pid, whose calls are never recorded. */
volatile const __u32 rec_self = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} rec_tracked SEC(".maps");

/* One entry per recorded thread, made at its first recorded call and removed when the
 * thread exits (`record_task_exit`): the call under way is written in place at entry and
 * handed over at exit, then marked idle (ts = 0). Reusing the entry spares a hash insert
 * and delete on every call. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct rec_path_call);
} rec_pending SEC(".maps");

/* Zeroes, to make a thread's entry from (the value is too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rec_path_call);
} rec_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rec_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} rec_lost SEC(".maps");

/* A fork: the child's pid in args[0]; nr is this value. */
#define REC_FORK 0xFFFF

static __always_inline void lost(void)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&rec_lost, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("tracepoint/sched/sched_process_fork")
int record_fork(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 parent = id >> 32;
	if (!bpf_map_lookup_elem(&rec_tracked, &parent))
		return 0;
	__u32 child = 0;
	bpf_probe_read_kernel(&child, sizeof(child), (char *)ctx + 20);
	__u8 one = 1;
	bpf_map_update_elem(&rec_tracked, &child, &one, BPF_ANY);
	if (parent == rec_self)
		return 0;
	struct rec_call c = {};
	c.ts = bpf_ktime_get_ns();
	c.tid = (__u32)id;
	c.tgid = parent;
	c.nr = REC_FORK;
	c.args[0] = child;
	if (bpf_ringbuf_output(&rec_events, &c, sizeof(c), RB_NO_WAKEUP))
		lost();
	return 0;
}

/* The saved user registers from r10 to di in one read (x86_64 struct pt_regs, whose
 * layout is user-visible ABI): r10, r9, r8, ax, cx, dx, si, di. */
#define PT_REGS_FROM_R10 56
#define R_R10 0
#define R_R9 1
#define R_R8 2
#define R_DX 5
#define R_SI 6
#define R_DI 7

/* Which calls are recorded, and which of their arguments are paths (bit 0: the first
 * argument, bit 1: the second, bit 3: the fourth), 0 for none; -1 for a call not recorded. */
static __always_inline int paths_of(__s32 nr)
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

SEC("raw_tp/sys_enter")
int record_enter(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (tgid == rec_self || !bpf_map_lookup_elem(&rec_tracked, &tgid))
		return 0;
	__s32 nr = (__s32)ctx[1];
	int paths = paths_of(nr);
	if (paths < 0)
		return 0;
	struct rec_path_call *s = bpf_map_lookup_elem(&rec_pending, &tid);
	if (!s) {
		__u32 zero = 0;
		struct rec_path_call *z = bpf_map_lookup_elem(&rec_zero, &zero);
		if (!z)
			return 0;
		bpf_map_update_elem(&rec_pending, &tid, z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&rec_pending, &tid);
		if (!s) {
			lost();
			return 0;
		}
	}
	__u64 r[8] = {};
	bpf_probe_read_kernel(r, sizeof(r), (const char *)ctx[0] + PT_REGS_FROM_R10);
	s->c.tid = tid;
	s->c.tgid = tgid;
	s->c.nr = nr;
	s->c.ret = 0;
	s->c.dur = 0;
	s->c.extra = 0;
	s->c.args[0] = r[R_DI];
	s->c.args[1] = r[R_SI];
	s->c.args[2] = r[R_DX];
	s->c.args[3] = r[R_R10];
	s->c.args[4] = r[R_R8];
	s->c.args[5] = r[R_R9];
	s->c.has_paths = paths ? 1 : 0;
	if (paths) {
		s->p1[0] = 0;
		s->p2[0] = 0;
		if (paths & 1)
			bpf_probe_read_user_str(s->p1, REC_PATH, (const void *)s->c.args[0]);
		else if (paths & 2)
			bpf_probe_read_user_str(s->p1, REC_PATH, (const void *)s->c.args[1]);
		if (paths == 3)
			bpf_probe_read_user_str(s->p2, REC_PATH, (const void *)s->c.args[1]);
		else if (paths & 8)
			bpf_probe_read_user_str(s->p2, REC_PATH, (const void *)s->c.args[3]);
	}
	s->c.ts = bpf_ktime_get_ns();
	return 0;
}

/* Only threads with an entry are recorded, and an entry with ts 0 has no call under way
 * (a call not recorded, or one that began before the recording). */
SEC("raw_tp/sys_exit")
int record_exit(__u64 *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct rec_path_call *p = bpf_map_lookup_elem(&rec_pending, &tid);
	if (!p || !p->c.ts)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__s64 ret = (__s64)ctx[1];
	p->c.dur = now - p->c.ts;
	p->c.ret = ret;
	__u32 nr = p->c.nr;
	if (ret == 0 && nr == 5) /* fstat: st_size at offset 48 */
		rec_read_user(&p->c.extra, 8, (const char *)p->c.args[1] + 48);
	if (ret == 0 && (nr == 4 || nr == 6))
		rec_read_user(&p->c.extra, 8, (const char *)p->c.args[1] + 48);
	if (ret == 0 && nr == 262)
		rec_read_user(&p->c.extra, 8, (const char *)p->c.args[2] + 48);
	long err;
	if (p->c.has_paths)
		err = bpf_ringbuf_output(&rec_events, p, sizeof(*p), RB_NO_WAKEUP);
	else
		err = bpf_ringbuf_output(&rec_events, &p->c, sizeof(p->c), RB_NO_WAKEUP);
	if (err)
		lost();
	p->c.ts = 0;
	return 0;
}

/* A thread's end: its entry goes. */
SEC("tracepoint/sched/sched_process_exit")
int record_task_exit(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&rec_pending, &tid);
	return 0;
}
