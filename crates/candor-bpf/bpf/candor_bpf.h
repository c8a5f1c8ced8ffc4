/* The few BPF definitions candor's programs need, written out here so the build needs
 * only clang: no libbpf headers, no vmlinux.h. Helper numbers are the kernel's stable
 * ABI (include/uapi/linux/bpf.h). Kernel structs are declared with only the fields read,
 * marked preserve_access_index so the loader relocates their offsets from the running
 * kernel's BTF (CO-RE). */
#ifndef CANDOR_BPF_H
#define CANDOR_BPF_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))

/* BTF-defined maps. */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_RINGBUF 27

#define BPF_ANY 0
#define BPF_NOEXIST 1

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
                                   __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static __u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_user_str)(void *dst, __u32 size, const void *src) = (void *)114;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) = (void *)113;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *)130;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;
static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)112;
/* BPF_RB_NO_WAKEUP: user space drains the ring buffers on a timer and never waits on them,
 * so a record needs no wake-up (which would queue an irq_work from the traced call). */
#define RB_NO_WAKEUP 1

/* Kernel structs: only the members read, relocated by name at load time. */
struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
	__u16 i_mode;
	unsigned long i_ino;
	__u32 i_rdev;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	unsigned int f_flags;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_io_accounting {
	__u64 rchar;
	__u64 wchar;
	__u64 syscr;
	__u64 syscw;
	__u64 read_bytes;
	__u64 write_bytes;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	struct files_struct *files;
	struct task_io_accounting ioac;
} __attribute__((preserve_access_index));

#define PF_KTHREAD 0x00200000

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct address_space {
	struct inode *host;
} __attribute__((preserve_access_index));

/* Both members sit in anonymous unions of the kernel's struct page; CO-RE finds them by
 * name through those. */
struct page {
	unsigned long compound_head;
	struct address_space *mapping;
} __attribute__((preserve_access_index));

/* `mapping` sits in an anonymous union, as in struct page. The first word is the flags
 * (an unsigned long, or a struct holding one), read at offset 0. */
struct folio {
	struct address_space *mapping;
	unsigned long index;
	unsigned long _flags_1;
} __attribute__((preserve_access_index));

struct bio_vec {
	struct page *bv_page;
} __attribute__((preserve_access_index));

struct bio {
	struct bio_vec *bi_io_vec;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	struct bio *bio;
	unsigned int cmd_flags;
	unsigned int __data_len;
	unsigned long long __sector;
	unsigned long long start_time_ns;
} __attribute__((preserve_access_index));

#endif
