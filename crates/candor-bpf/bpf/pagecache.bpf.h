// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Part of candor.bpf.c (included there, in this order, after its shared definitions): Page cache insertions and writeback: which inode's pages whose writes dirtied. */

/* ---- page cache and writeback ---- */

/* These programs are raw tracepoints typed by the kernel's BTF (tp_btf), like the block
 * programs: they get the hook's arguments (a folio, a mapping, an inode) and read their
 * fields with plain loads. A classic tracepoint would first build its perf record (the
 * writeback ones copy the backing device's name into it) on every event of the machine,
 * tracked or not, and is skipped when another classic program runs on the CPU. */

/* The pages a folio holds: a large folio (PG_head in the first word of its flags) keeps
 * its order in the low byte of _flags_1. */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long f0 = *(unsigned long *)folio;
	if (!(f0 & (1UL << 6)))
		return 1;
	return 1ULL << (folio->_flags_1 & 15);
}

/* mm_filemap_add_to_page_cache(folio): a page read into (or created in) the page cache.
 * The file is the one the tracepoint's record names: its superblock's device (the inode's
 * own device number when it has no superblock) and its inode number. */
SEC("tp_btf/mm_filemap_add_to_page_cache")
int candor_cache_add(__u64 *ctx)
{
	struct folio *folio = (struct folio *)ctx[0];
	struct address_space *mapping = folio->mapping;
	if (!mapping)
		return 0;
	struct inode *host = mapping->host;
	if (!host)
		return 0;
	struct super_block *sb = host->i_sb;
	__u64 pages = folio_pages(folio);
	struct file_key k = { .dev = sb ? sb->s_dev : host->i_rdev, .ino = host->i_ino };
	/* Per-file figures exist only with phases (`candor audit`): without them the map is
	 * empty and the lookup is left out. */
	struct file_stat *fs = candor_phases ? bpf_map_lookup_elem(&files, &k) : 0;
	/* A page of a file the set follows counts whoever reads it in (readahead from an
	 * io-wq worker too); any other counts when the set reads it in. */
	if (fs)
		__sync_fetch_and_add(&fs->misses, pages);
	if (fs || set_of_memo(bpf_get_current_pid_tgid() >> 32, MEMO_CACHE_ADD) == SET_OWN) {
		__u32 zero = 0;
		__u64 *m = bpf_map_lookup_elem(&cache_misses, &zero);
		if (m)
			*m += pages;
	}
	return 0;
}

/* An inode as the writeback programs know it: its superblock's device (the inode's own
 * device number when it has none) and its number. Both programs that name it (a folio
 * dirtied, an inode written back) get the inode itself, so two plain loads make the key. */
static __always_inline struct wb_key wb_key_of(struct inode *in)
{
	struct super_block *sb = in->i_sb;
	struct wb_key k = { .dev = sb ? sb->s_dev : in->i_rdev, .ino = in->i_ino };
	return k;
}

/* The inode this CPU last saw the set dirty, and which process did. The kernel runs the
 * dirtying program with the mapping's page lock held and interrupts off, so every
 * nanosecond spent there also holds up the flusher working on the same file: a folio
 * dirtied again by the same process in the same inode (a test writing its file, page
 * after page) returns after one per-CPU read, without the process set's and the marks'
 * hash lookups. A mark once made is never removed, so the inode is still marked. */
struct wb_last {
	__u32 tgid;
	__u32 dev;
	__u64 ino;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wb_last);
} wb_last SEC(".maps");

/* writeback_dirty_folio(folio, mapping): the set's writes dirty an inode's pages. */
SEC("tp_btf/writeback_dirty_folio")
int candor_dirty_folio(__u64 *ctx)
{
	struct address_space *mapping = (struct address_space *)ctx[1];
	if (!mapping)
		return 0;
	struct inode *in = mapping->host;
	if (!in)
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct wb_key k = wb_key_of(in);
	__u32 zero = 0;
	struct wb_last *last = bpf_map_lookup_elem(&wb_last, &zero);
	if (last && last->tgid == tgid && last->ino == k.ino && last->dev == k.dev)
		return 0;
	__u8 set = set_of_memo(tgid, MEMO_DIRTY);
	if (!set)
		return 0;
	/* The set's own mark wins over the job's (a file both wrote: --shared-file). */
	__u8 *by = bpf_map_lookup_elem(&wb_inodes, &k);
	if (!by || (*by != SET_OWN && *by != set))
		bpf_map_update_elem(&wb_inodes, &k, &set, BPF_ANY);
	if (last) {
		last->tgid = tgid;
		last->dev = k.dev;
		last->ino = k.ino;
	}
	return 0;
}

/* writeback_single_inode_start(inode, wbc, nr_to_write): this thread writes the inode back
 * until writeback_single_inode(inode, wbc, nr_to_write); the block programs ask whose
 * inode it is. */
SEC("tp_btf/writeback_single_inode_start")
int candor_wb_start(__u64 *ctx)
{
	struct inode *in = (struct inode *)ctx[0];
	if (!in)
		return 0;
	struct wb_key k = wb_key_of(in);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&wb_cur, &tid, &k, BPF_ANY);
	return 0;
}

SEC("tp_btf/writeback_single_inode")
int candor_wb_end(__u64 *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&wb_cur, &tid);
	return 0;
}
