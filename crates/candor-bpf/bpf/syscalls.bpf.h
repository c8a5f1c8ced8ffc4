// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): The system calls of the tracked set: counted, timed and followed per file. */

/* ---- syscalls ---- */

/* Syscalls are traced on the raw tracepoints raw_syscalls:sys_enter/sys_exit: a raw
 * tracepoint runs the program straight from the kernel's hook, without the copy into a
 * perf record that a classic tracepoint makes, which costs several hundred nanoseconds
 * per call. They are attached typed by the kernel's BTF (tp_btf): the hook's first
 * argument is then a typed pointer to the saved user registers, read with `reg` (in
 * candor.bpf.c). */

/* `starts` has one entry per tracked thread (made by user space for the threads that
 * exist when a process is added, by the fork program for later ones, removed at thread
 * exit), reused from call to call (ts = 0 when idle): its lookup is also the "is this
 * thread tracked" test, and an in-place write is much cheaper than a hash insert and
 * delete on every call. */
SEC("tp_btf/sys_enter")
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
SEC("tp_btf/sys_enter")
int candor_sys_enter_null(void *ctx)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int candor_sys_exit_null(void *ctx)
{
	return 0;
}

/* The counting twin of the two syscall programs, attached alone on sys_exit for the length
 * of a test whose operations are system calls (copy, metadata: `Tracer::count_syscalls`).
 * Per slot it keeps the count, errors and bytes returned, no time and no phase: no clock
 * read and no second program per call. At exit the saved user registers still hold the
 * call's number (orig_ax) and arguments (only ax has become the result). */
SEC("tp_btf/sys_exit")
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

/* A read (rd) or a write of `ret` bytes, `lat` ns long, into its descriptor's phase: at
 * file offset `at`, or, when `at` is negative, at the descriptor's position, which it
 * advances. */
static __always_inline void phase_add(struct phase *p, int rd, __s64 at, __u64 ret, __u64 lat)
{
	__u64 off = p->pos;
	if (at >= 0)
		off = at;
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
}

/* One end of a copy the kernel made between two descriptors: `ret` bytes read from (rd)
 * or written to descriptor `fd`, at the offset the call's offset pointer held (it was
 * advanced by `ret`, so it is read back at exit), or at the descriptor's position when
 * the pointer is NULL. */
static __always_inline void copy_end(__u32 tgid, __u32 fd, int rd, __u64 off_ptr, __u64 ret,
				     __u64 lat, __u64 start, __u64 now)
{
	int full = 0;
	struct fd_key k = { .tgid = tgid, .fd = fd };
	struct phase *p = bpf_map_lookup_elem(&fds, &k);
	if (!p)
		p = new_phase(tgid, fd, start, 0, &full);
	if (!p) {
		unattributed(tgid, rd, ret, full);
		return;
	}
	__s64 at = -1;
	if (off_ptr) {
		__u64 v = 0;
		if (!bpf_probe_read_user(&v, sizeof(v), (const void *)off_ptr) && v >= ret)
			at = v - ret;
	}
	if (!p->first_ns)
		p->first_ns = start;
	p->last_ns = now;
	phase_add(p, rd, at, ret, lat);
}

/* copy_file_range(fd_in, off_in, fd_out, off_out, len, flags) and sendfile(out_fd, in_fd,
 * offset, count): the bytes move inside the kernel, read from one descriptor and written
 * to the other, both followed per file like a read and a write (the kernel counts them in
 * the task's read and write counters too, which the audit's completeness compares with).
 * splice is not followed: the kernel leaves it out of those counters, and one end is
 * always a pipe. The call's time is shared between its two ends, so the phases' times
 * still add up to the calls'. At exit the saved registers still hold the arguments. */
static __always_inline void copy_io(const void *regs, __u32 slot, __u32 tgid, __u64 ret,
				    __u64 lat, __u64 start, __u64 now)
{
	__u32 in_fd, out_fd;
	__u64 in_ptr, out_ptr = 0;
	if (slot == SLOT_SENDFILE) {
		out_fd = (__u32)reg(regs, PT_REGS_DI);
		in_fd = (__u32)reg(regs, PT_REGS_SI);
		in_ptr = reg(regs, PT_REGS_DX);
	} else {
		in_fd = (__u32)reg(regs, PT_REGS_DI);
		in_ptr = reg(regs, PT_REGS_SI);
		out_fd = (__u32)reg(regs, PT_REGS_DX);
		out_ptr = reg(regs, PT_REGS_R10);
	}
	copy_end(tgid, in_fd, 1, in_ptr, ret, lat / 2, start, now);
	copy_end(tgid, out_fd, 0, out_ptr, ret, lat - lat / 2, start, now);
}

SEC("tp_btf/sys_exit")
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
	if (ret >= 0 && candor_phases && (slot == SLOT_COPY_FILE_RANGE || slot == SLOT_SENDFILE)) {
		copy_io((const void *)ctx[0], slot, tgid, ret, lat, s.ts, now);
		return 0;
	}
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
		__s64 at = -1;
		if (is_positional(slot) && (__s64)s.arg >= 0)
			at = s.arg;
		phase_add(p, rd, at, ret, lat);
	} else if (slot == SLOT_LSEEK) {
		__sync_fetch_and_add(&p->lseeks, 1);
		p->pos = ret;
	} else if (slot == SLOT_FSYNC || slot == SLOT_FDATASYNC) {
		__sync_fetch_and_add(&p->fsyncs, 1);
		__sync_fetch_and_add(&p->fsync_ns, lat);
	}
	return 0;
}

/* page_fault_user(address, regs, error_code): a typed raw tracepoint, so no perf record
 * is built for the faults of every other process of the machine. */
SEC("tp_btf/page_fault_user")
int candor_page_fault(__u64 *ctx)
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
