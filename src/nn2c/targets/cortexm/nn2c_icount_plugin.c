/* nn2c_icount_plugin.c: QEMU TCG plugin (plugin API version 1, as in QEMU 7.2) that counts guest
 * instructions, loads and stores inside measurement windows, for the nn2c Cortex-M bench.
 *
 * A window opens at the first instruction of bench_begin() and closes at the first instruction
 * of bench_end() (arguments begin=, end=). Every translated instruction gets an inline
 * "add 1" on a global counter and on its own counter (one per 2-byte address of the code range
 * code_lo..code_hi); exec callbacks on the two markers snapshot them, so a window's count is a
 * difference of counters and per-PC counts give per-function totals on the host side.
 * Instructions of the caller-side range site_lo..site_hi (the model's invoke function) also get
 * an exec callback: every instruction executed from one of them up to the next one is charged
 * to it, so a call instruction's bucket holds the whole call (per-layer profile).
 * Memory accesses: every translated instruction also gets a memory callback, which adds 1 to
 * stores or to loads (qemu_plugin_mem_is_store). QEMU calls it once per guest memory access its
 * translation makes, and Arm's LDM/STM/PUSH/POP/LDRD/STRD/VLDM/VPUSH are translated as one access
 * per register (32-bit word), so each element counts: LDM of 4 registers = 4 loads, LDRD = 2
 * (checked in tests/test_cortexm.py). Helium (MVE) loads and stores are helpers that access memory
 * per element (a VLDRB.8 = 16 loads): M55 counts are not comparable with M4's. Windows and site
 * buckets snapshot the two counters like the instruction counter. (QEMU 7.2's inline memory ops
 * are not used: their read/write filter is off, seen here: a read-only op fired on stores and a
 * write-only op on every access.)
 *
 * Debian ships no qemu-plugin.h, so the dozen API functions used are declared here with the
 * signatures of QEMU 7.2's include/qemu/qemu-plugin.h. Build: cc -shared -fPIC -O2.
 * Output (out=PATH, at exit): "windows N", "w COUNT LOADS STORES" per window, "outside COUNT",
 * "pc ADDR COUNT" and "site ADDR COUNT LOADS STORES" summed over windows (addresses in hex). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* not read: only passed through */
struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
                                                void *ptr, uint64_t imm);
typedef uint32_t qemu_plugin_meminfo_t;
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                          void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void *userdata);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_WINDOWS 4096

static uint64_t begin_pc, end_pc, site_lo, site_hi, code_lo, code_hi;
static char out_path[4096];

static uint64_t total;        /* every executed instruction */
static uint64_t loads, stores; /* every guest memory access (one per element of LDM/LDRD) */
static uint64_t outside;      /* executed instructions outside code_lo..code_hi */
static uint64_t *pc_count;    /* per 2-byte slot of the code range, all time */
static uint64_t *pc_snapshot; /* pc_count when the current window opened */
static uint64_t *pc_window;   /* summed over closed windows */
static uint64_t *site_window; /* per 2-byte slot of the site range, summed over windows */
static uint64_t *site_loads, *site_stores; /* the same for loads and stores */
static size_t code_slots, site_slots;

static bool in_window;
static uint64_t window_start, outside_start, outside_window;
static uint64_t windows[MAX_WINDOWS], window_loads[MAX_WINDOWS], window_stores[MAX_WINDOWS];
static uint64_t window_load_start, window_store_start;
static size_t window_count, windows_dropped;
static bool site_open;
static uint64_t site_pc, site_start, site_load_start, site_store_start;

static void close_site(void) {
    if (site_open) {
        size_t slot = (size_t)((site_pc - site_lo) >> 1);
        site_window[slot] += total - site_start;
        site_loads[slot] += loads - site_load_start;
        site_stores[slot] += stores - site_store_start;
        site_open = false;
    }
}

static void on_begin(unsigned int vcpu, void *userdata) {
    (void)vcpu;
    (void)userdata;
    if (in_window) {
        return; /* nested begin: keep the outer window */
    }
    in_window = true;
    window_start = total;
    window_load_start = loads;
    window_store_start = stores;
    outside_start = outside;
    memcpy(pc_snapshot, pc_count, code_slots * sizeof *pc_count);
    site_open = false;
}

static void on_end(unsigned int vcpu, void *userdata) {
    (void)vcpu;
    (void)userdata;
    if (!in_window) {
        return;
    }
    in_window = false;
    close_site();
    if (window_count < MAX_WINDOWS) {
        window_loads[window_count] = loads - window_load_start;
        window_stores[window_count] = stores - window_store_start;
        windows[window_count++] = total - window_start;
    } else {
        windows_dropped++;
    }
    outside_window += outside - outside_start;
    for (size_t i = 0; i < code_slots; ++i) {
        pc_window[i] += pc_count[i] - pc_snapshot[i];
    }
}

static void on_site(unsigned int vcpu, void *userdata) {
    (void)vcpu;
    if (!in_window) {
        return;
    }
    close_site();
    site_open = true;
    site_pc = (uint64_t)(uintptr_t)userdata;
    site_start = total;
    site_load_start = loads;
    site_store_start = stores;
}

static void on_memory(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata) {
    (void)vcpu;
    (void)vaddr;
    (void)userdata;
    if (qemu_plugin_mem_is_store(info)) {
        ++stores;
    } else {
        ++loads;
    }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; ++i) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        /* callbacks are registered before the inline adds: a snapshot taken at an instruction
         * does not include that instruction, so it belongs to the window or bucket it opens */
        if (pc == begin_pc) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
        }
        if (pc == end_pc) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
        }
        if (pc >= site_lo && pc < site_hi) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_site, QEMU_PLUGIN_CB_NO_REGS,
                                                   (void *)(uintptr_t)pc);
        }
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &total, 1);
        /* runs at the access, after the exec callbacks: an instruction's accesses belong to the
         * window or bucket its callbacks open, like its instruction count */
        qemu_plugin_register_vcpu_mem_cb(insn, on_memory, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
        if (pc >= code_lo && pc < code_hi) {
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                       &pc_count[(pc - code_lo) >> 1], 1);
        } else {
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &outside, 1);
        }
    }
}

static void write_results(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    (void)userdata;
    FILE *out = fopen(out_path, "w");
    if (!out) {
        fprintf(stderr, "nn2c icount plugin: cannot write %s\n", out_path);
        return;
    }
    fprintf(out, "nn2c-icount 2\nwindows %zu\n", window_count);
    for (size_t i = 0; i < window_count; ++i) {
        fprintf(out, "w %llu %llu %llu\n", (unsigned long long)windows[i], (unsigned long long)window_loads[i],
                (unsigned long long)window_stores[i]);
    }
    fprintf(out, "dropped %zu\nopen %d\noutside %llu\n", windows_dropped, in_window ? 1 : 0,
            (unsigned long long)outside_window);
    for (size_t i = 0; i < code_slots; ++i) {
        if (pc_window[i]) {
            fprintf(out, "pc %llx %llu\n", (unsigned long long)(code_lo + 2 * i),
                    (unsigned long long)pc_window[i]);
        }
    }
    for (size_t i = 0; i < site_slots; ++i) {
        if (site_window[i]) {
            fprintf(out, "site %llx %llu %llu %llu\n", (unsigned long long)(site_lo + 2 * i),
                    (unsigned long long)site_window[i], (unsigned long long)site_loads[i],
                    (unsigned long long)site_stores[i]);
        }
    }
    fclose(out);
}

static bool parse_arg(const char *arg, const char *key, uint64_t *value) {
    size_t n = strlen(key);
    if (strncmp(arg, key, n) != 0 || arg[n] != '=') {
        return false;
    }
    *value = strtoull(arg + n + 1, NULL, 0);
    return true;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; ++i) {
        const char *arg = argv[i];
        if (strncmp(arg, "out=", 4) == 0) {
            snprintf(out_path, sizeof out_path, "%s", arg + 4);
        } else if (!(parse_arg(arg, "begin", &begin_pc) || parse_arg(arg, "end", &end_pc) ||
                     parse_arg(arg, "site_lo", &site_lo) || parse_arg(arg, "site_hi", &site_hi) ||
                     parse_arg(arg, "code_lo", &code_lo) || parse_arg(arg, "code_hi", &code_hi))) {
            fprintf(stderr, "nn2c icount plugin: unknown argument %s\n", arg);
            return -1;
        }
    }
    if (!out_path[0] || !begin_pc || !end_pc || code_hi <= code_lo || site_hi < site_lo) {
        fprintf(stderr, "nn2c icount plugin: need out=, begin=, end=, code_lo=, code_hi= (site_lo/site_hi)\n");
        return -1;
    }
    code_slots = (size_t)((code_hi - code_lo + 1) >> 1);
    site_slots = (size_t)((site_hi - site_lo + 1) >> 1);
    pc_count = calloc(code_slots, sizeof *pc_count);
    pc_snapshot = calloc(code_slots, sizeof *pc_snapshot);
    pc_window = calloc(code_slots, sizeof *pc_window);
    site_window = calloc(site_slots ? site_slots : 1, sizeof *site_window);
    site_loads = calloc(site_slots ? site_slots : 1, sizeof *site_loads);
    site_stores = calloc(site_slots ? site_slots : 1, sizeof *site_stores);
    if (!pc_count || !pc_snapshot || !pc_window || !site_window || !site_loads || !site_stores) {
        fprintf(stderr, "nn2c icount plugin: out of memory\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_results, NULL);
    return 0;
}
