// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): Page cache insertions and writeback: which inode's pages whose writes dirtied. */

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
