// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): Block requests: who issued them, for which file, how long they took. */

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

static __always_inline __u8 owner_now(__u32 memo)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u8 set = set_of_memo(tgid, memo);
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
static __always_inline struct req_val *req_new(__u64 rq, struct request *rqp, __u32 memo)
{
	struct rq_info ri = {};
	if (rq_info_btf(rqp, &ri))
		return 0;
	__u8 owner = owner_now(memo);
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

static __always_inline struct req_val *req_of(__u64 *ctx, __u32 memo)
{
	__u64 rq = rq_addr(ctx);
	struct req_val *v = req_find(rq);
	return v ? v : req_new(rq, (struct request *)ctx[0], memo);
}

/* The request enters the block layer in its submitter's context: decide its owner here. */
SEC("tp_btf/block_io_start")
int candor_io_start(__u64 *ctx)
{
	req_new(rq_addr(ctx), (struct request *)ctx[0], MEMO_IO_START);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int candor_rq_issue(__u64 *ctx)
{
	struct request *rqp = (struct request *)ctx[0];
	struct req_val *v = req_of(ctx, MEMO_RQ_ISSUE);
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
		v->owner = owner_now(MEMO_RQ_ISSUE);
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
	/* Queue time, from the request's making to its issue: the kernel stamps the request
	 * when it is made (start_time_ns, on the clock of bpf_ktime_get_ns) if the device
	 * keeps I/O statistics or has a scheduler, so no program is needed on block_rq_insert
	 * (about 100 ns a request). Within a plug the stamp is the plug's first reading. */
	__u64 made = rqp->start_time_ns;
	if (made && now >= made) {
		__sync_fetch_and_add(&s->queued, 1);
		__sync_fetch_and_add(&s->queue_ns, now - made);
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
