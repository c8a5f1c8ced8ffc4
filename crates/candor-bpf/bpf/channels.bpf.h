// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): I/O without read or write calls: Linux AIO, io_uring and mapped files. */

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
	/* Until the request completes: the descriptor its SQE named (or, for a registered
	 * file, its index). */
	int fd;
} __attribute__((preserve_access_index));

/* The request's own command data, a read or write's `struct io_rw` for those. */
struct io_cmd_data {
} __attribute__((preserve_access_index));

struct kiocb {
	long long ki_pos;
} __attribute__((preserve_access_index));

struct io_rw {
	struct kiocb kiocb;
	__u64 addr;
	__u32 len;
} __attribute__((preserve_access_index));

struct io_kiocb {
	struct file *file;
	__u8 opcode;
	/* REQ_F_FIXED_FILE is bit 0 (the low word is enough). */
	__u32 flags;
	struct io_cqe cqe;
	void *ctx;
	struct io_cmd_data cmd;
} __attribute__((preserve_access_index));

/* `candor audit --record`: what a request of a tracked ring asked for, from its
 * submission to its completion, where it is handed to user space (REC_URING). */
struct uring_rec {
	__u64 ts;
	__s64 pos;
	__u32 len;
	__s32 fd;
	/* The submitting thread and its process (a ring inherited across a fork is used by
	 * the child's threads too; an SQPOLL thread is one of the ring creator's). */
	__u32 tid;
	__u32 tgid;
	__u8 op;
	__u8 fixed;
	__u8 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_rec);
} uring_recs SEC(".maps");

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

/* The requests a recording keeps: reads, writes and fsyncs. */
static __always_inline int uring_op_kept(__u8 op)
{
	switch (op) {
	case IORING_OP_READV:
	case IORING_OP_WRITEV:
	case IORING_OP_FSYNC:
	case IORING_OP_READ_FIXED:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_READ:
	case IORING_OP_WRITE:
	case IORING_OP_READV_FIXED:
	case IORING_OP_WRITEV_FIXED:
		return 1;
	}
	return 0;
}

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
	if (!candor_record)
		return 0;
	__u8 op = 0;
	bpf_probe_read_kernel(&op, sizeof(op), &req->opcode);
	if (uring_op_kept(op)) {
		__u64 id = bpf_get_current_pid_tgid();
		struct uring_rec r = { .ts = now, .tid = (__u32)id, .tgid = id >> 32, .op = op };
		__u32 rflags = 0;
		bpf_probe_read_kernel(&r.fd, sizeof(r.fd), &req->cqe.fd);
		bpf_probe_read_kernel(&rflags, sizeof(rflags), &req->flags);
		r.fixed = rflags & 1;
		/* A read or write's position and length (iovecs for the vectored ones), set
		 * from its SQE before this tracepoint. */
		struct io_rw *rw = (struct io_rw *)&req->cmd;
		bpf_probe_read_kernel(&r.pos, sizeof(r.pos), &rw->kiocb.ki_pos);
		bpf_probe_read_kernel(&r.len, sizeof(r.len), &rw->len);
		bpf_map_update_elem(&uring_recs, &key, &r, BPF_ANY);
	}
	return 0;
}

/* At a request's completion, its record for `candor audit --record`: args[0] the
 * descriptor, args[1] the position (-1: the file's own), args[2] the length, args[3] the
 * opcode, args[4] 1 for a registered file, ret the result; ts, tid and tgid its
 * submission's. */
static __always_inline void uring_record_done(struct io_kiocb *req, __s32 res)
{
	__u64 key = (__u64)req;
	struct uring_rec *r = bpf_map_lookup_elem(&uring_recs, &key);
	if (!r)
		return;
	struct rec_call c = {};
	__u64 now = bpf_ktime_get_ns();
	c.ts = r->ts;
	c.dur = now > r->ts ? now - r->ts : 0;
	c.ret = res;
	c.tid = r->tid;
	c.tgid = r->tgid;
	c.nr = REC_URING;
	c.args[0] = (__u64)(__s64)r->fd;
	c.args[1] = (__u64)r->pos;
	c.args[2] = r->len;
	c.args[3] = r->op;
	c.args[4] = r->fixed;
	bpf_map_delete_elem(&uring_recs, &key);
	if (bpf_ringbuf_output(&rec_events, &c, sizeof(c), RB_NO_WAKEUP))
		rec_lost_one();
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
	bpf_probe_read_kernel(&res, sizeof(res), &req->cqe.res);
	if (candor_record)
		uring_record_done(req, res);
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

/* `candor audit --record`: pages of a mapped file a tracked process (the callers have
 * checked) faulted in or dirtied, as they happened (REC_MAPPED). */
static __always_inline void record_mapped(__u32 tgid, __u32 dev, __u64 ino, __u64 start,
					  __u64 n, __u64 write)
{
	if (!candor_record || tgid == candor_record_self)
		return;
	struct rec_call c = {};
	__u64 id = bpf_get_current_pid_tgid();
	c.ts = bpf_ktime_get_ns();
	c.tid = (__u32)id;
	c.tgid = tgid;
	c.nr = REC_MAPPED;
	c.args[0] = dev;
	c.args[1] = ino;
	c.args[2] = start;
	c.args[3] = n;
	c.args[4] = write;
	if (bpf_ringbuf_output(&rec_events, &c, sizeof(c), RB_NO_WAKEUP))
		rec_lost_one();
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
	record_mapped(tgid, dev, ino, start, n, 0);
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
	if (candor_record) {
		__u64 index = 0;
		bpf_probe_read_kernel(&index, sizeof(index), &folio->index);
		record_mapped(tgid, dev, ino, index, pages, 1);
	}
	__u64 now = bpf_ktime_get_ns();
	chan_add(tgid, dev, ino, flags, CHAN_MMAP, 1, pages * 4096, 1, now, now);
	return 0;
}
