/* backend.c - MLIR pass pipeline, LLVM NVPTX, ptxas and fatbinary.
 *
 * One MLIR context per backend. Per kernel and target: build the module
 * (lower_kernel), verify it, run the pass pipeline (one string, parsed with
 * mlirParsePassPipeline), translate the gpu.module to LLVM IR, optimise at
 * O3, print PTX with the NVPTX target machine, then run ptxas for the cubin.
 * ptxas and fatbinary are the CUDA toolkit's own programs; they run with
 * fixed arguments in a private temporary directory, so their output does not
 * depend on where or when cakec runs. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <mlir-c/Conversion.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Dialect/GPU.h>
#include <mlir-c/Dialect/LLVM.h>
#include <mlir-c/Pass.h>
#include <mlir-c/RegisterEverything.h>
#include <mlir-c/Target/LLVMIR.h>
#include <mlir-c/Transforms.h>

#include "backend.h"
#include "lower.h"

extern char **environ;

void LLVMInitializeNVPTXTargetInfo(void);
void LLVMInitializeNVPTXTarget(void);
void LLVMInitializeNVPTXTargetMC(void);
void LLVMInitializeNVPTXAsmPrinter(void);

static const char *const PIPELINE =
    "builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{index-bitwidth=64},"
    "canonicalize,cse,reconcile-unrealized-casts))";
static const char *const PTX_FEATURES = "+ptx88";
/* LLVM's part is light: the kernels come out of MLIR already simplified and
 * ptxas optimises the PTX again. Measured on the shipped package (2 cores,
 * 2026-12-06): O1 and the default code-generation level take 39 s of CPU
 * where O3 and the aggressive level took 54 s, with no spill, and the KDA,
 * GDN and KDA-training kernels ran as fast or faster on the GPU
 * (docs/gpu-notes.md). O3 also unrolls the chain's loop twice over, which
 * bought nothing there. */
static const char *const LLVM_PIPELINE = "default<O1>";

struct Backend {
  MlirContext ctx;
  char ptxas[1024], fatbinary[1024];
  struct { char target[16]; int ok; } probed[8]; /* backend_can_assemble's answers */
  int nprobed;
  char *ptxas_version;
  Diag *diag;  /* for MLIR diagnostics during one compile */
};

const char *backend_ptx_target(const char *target) {
  const Target *t = target_get(target);
  return t ? t->ptx_target : NULL;
}

const char *backend_target_path(const char *target) {
  const Target *t = target_get(target);
  return t ? t->path : NULL;
}

void backend_describe_targets(Buf *out) { target_describe(out); }

static void append_cb(MlirStringRef s, void *user) { buf_put((Buf *)user, s.data, s.length); }

static MlirLogicalResult diag_to_cake(MlirDiagnostic d, void *user) {
  Backend *be = user;
  Buf b;
  buf_init(&b);
  mlirLocationPrint(mlirDiagnosticGetLocation(d), append_cb, &b);
  buf_puts(&b, ": ");
  mlirDiagnosticPrint(d, append_cb, &b);
  if (be->diag) diag_plain(be->diag, "in MLIR lowering: %s", b.data);
  buf_free(&b);
  return mlirLogicalResultSuccess();
}

Backend *backend_create(Diag *diag, const char *cuda_root) {
  Backend *be = cake_xcalloc(1, sizeof *be);
  if (!cuda_root) cuda_root = getenv("CAKE_CUDA_ROOT");
  if (!cuda_root) cuda_root = "/usr/local/cuda";
  snprintf(be->ptxas, sizeof be->ptxas, "%s/bin/ptxas", cuda_root);
  snprintf(be->fatbinary, sizeof be->fatbinary, "%s/bin/fatbinary", cuda_root);
  MlirDialectRegistry reg = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(reg);
  be->ctx = mlirContextCreateWithRegistry(reg, false);
  mlirDialectRegistryDestroy(reg);
  static const char *const dialects[] = {"builtin", "gpu", "llvm", "nvvm", "arith", "scf", "cf"};
  for (size_t i = 0; i < sizeof dialects / sizeof dialects[0]; i++)
    mlirContextGetOrLoadDialect(be->ctx, mlirStringRefCreateFromCString(dialects[i]));
  mlirRegisterAllLLVMTranslations(be->ctx);
  static int registered;
  if (!registered) {
    mlirRegisterConversionPasses();
    mlirRegisterTransformsPasses();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    const char *argv[] = {"cakec", "-nvptx-short-ptr"};
    LLVMParseCommandLineOptions(2, argv, NULL);
    registered = 1;
  }
  mlirContextAttachDiagnosticHandler(be->ctx, diag_to_cake, be, NULL);
  return be;
}

void backend_destroy(Backend *be) {
  if (!be) return;
  mlirContextDestroy(be->ctx);
  free(be->ptxas_version);
  free(be);
}

void kernel_binary_free(KernelBinary *kb) {
  free(kb->symbol);
  free(kb->mlir);
  free(kb->llvm);
  free(kb->ptx);
  free(kb->cubin);
  free(kb->note);
  memset(kb, 0, sizeof *kb);
}

/* ---- running the CUDA tools ---- */

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static unsigned char *read_file(const char *path, size_t *len) {
  Buf b;
  buf_init(&b);
  if (buf_read_file(&b, path)) {
    buf_free(&b);
    return NULL;
  }
  *len = b.len;
  return (unsigned char *)buf_take(&b);
}

/* Run argv in `dir`; its stdout and stderr go to `log`. Returns the exit status. */
static int run_tool(char *const argv[], const char *dir, Buf *log) {
  char logpath[1200];
  snprintf(logpath, sizeof logpath, "%s/tool.log", dir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    buf_printf(log, "cannot run %s: %s", argv[0], strerror(rc));
    return -1;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  buf_read_file(log, logpath); /* the tool's output, when it wrote any */
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int make_tmpdir(char *out, size_t n) {
  const char *t = getenv("TMPDIR");
  snprintf(out, n, "%s/cakec-XXXXXX", t && *t ? t : "/tmp");
  return mkdtemp(out) ? 0 : -1;
}

static void remove_tmpdir(const char *dir, const char *const *files, int nfiles) {
  char p[1200];
  for (int i = 0; i < nfiles; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/tool.log", dir);
  unlink(p);
  rmdir(dir);
}

/* Run ptxas with `arg` (and `arch` when not NULL) in a temporary directory;
 * its exit status, its output in `log`. */
static int ptxas_query(Backend *be, const char *arch, const char *arg, Buf *log) {
  char dir[1100];
  if (make_tmpdir(dir, sizeof dir)) return -1;
  char *argv[4] = {be->ptxas, NULL, NULL, NULL};
  int na = 1;
  if (arch) argv[na++] = (char *)arch;
  argv[na] = (char *)arg;
  int rc = run_tool(argv, dir, log);
  remove_tmpdir(dir, NULL, 0);
  return rc;
}

void backend_lowering_key(const char *target, Buf *out) {
  const Target *t = target_get(target);
  if (t) target_lowering_key(t, out);
  else buf_printf(out, "unknown %s", target);
}

void backend_view_key(const char *target, Buf *out) {
  const Target *t = target_get(target);
  if (t) target_view_key(t, out);
  else buf_printf(out, "unknown %s", target);
}

const char *backend_reference_chip(Backend *be, const char *target) {
  Buf mine;
  buf_init(&mine);
  backend_lowering_key(target, &mine);
  int n;
  const Target *all = target_all(&n);
  const char *ref = NULL;
  for (int i = 0; i < n && !ref; i++) {
    Buf k;
    buf_init(&k);
    target_lowering_key(&all[i], &k);
    if (k.len == mine.len && !memcmp(k.data, mine.data, k.len) && backend_can_assemble(be, all[i].name))
      ref = all[i].name;
    buf_free(&k);
  }
  buf_free(&mine);
  return ref;
}

/* what lower_kernel's nvvm.minctasm of 2 becomes in the PTX */
static const char TWO_PER_SM[] = ".minnctapersm 2";

int backend_ptx_chooses_occupancy(const char *ptx) { return ptx && strstr(ptx, TWO_PER_SM) != NULL; }

int backend_can_assemble(Backend *be, const char *target) {
  /* ptxas 13.0 knows sm_90a, sm_100a and sm_103a; sm_107a is asked */
  if (strcmp(target, "sm_107a") != 0) return 1;
  for (int i = 0; i < be->nprobed; i++)
    if (!strcmp(be->probed[i].target, target)) return be->probed[i].ok;
  char arch[64];
  snprintf(arch, sizeof arch, "-arch=%s", target);
  Buf log;
  buf_init(&log);
  int ok = ptxas_query(be, arch, "--version", &log) == 0 && !strstr(log.data ? log.data : "", "not defined");
  buf_free(&log);
  if (be->nprobed < 8) {
    snprintf(be->probed[be->nprobed].target, sizeof be->probed[0].target, "%s", target);
    be->probed[be->nprobed++].ok = ok;
  }
  return ok;
}

const char *backend_ptxas_version(Backend *be) {
  if (!be->ptxas_version) {
    Buf log;
    buf_init(&log);
    if (ptxas_query(be, NULL, "--version", &log) != 0) log.len = 0;
    buf_puts(&log, "");
    be->ptxas_version = buf_take(&log);
  }
  return be->ptxas_version;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double backend_tool_seconds(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_CHILDREN, &ru)) return 0;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* The integer written just before `label` in ptxas's -v report, or 0. */
static int number_before(const char *log, const char *label) {
  const char *p = strstr(log, label);
  if (!p) return 0;
  while (p > log && p[-1] == ' ') p--;
  while (p > log && p[-1] >= '0' && p[-1] <= '9') p--;
  return atoi(p);
}

static void parse_ptxas_report(const char *log, KernelBinary *kb) {
  kb->stack_bytes = number_before(log, "bytes stack frame");
  kb->spill_bytes = number_before(log, "bytes spill stores") + number_before(log, "bytes spill loads");
  const char *p = strstr(log, "Used ");
  if (p) kb->registers = atoi(p + 5);
}

static int run_ptxas(Backend *be, Diag *diag, KernelBinary *kb) {
  char dir[1100];
  if (make_tmpdir(dir, sizeof dir)) {
    diag_plain(diag, "cannot create a temporary directory: %s", strerror(errno));
    return -1;
  }
  char in[1200], out[1200], arch[64];
  snprintf(in, sizeof in, "%s/kernel.ptx", dir);
  snprintf(out, sizeof out, "%s/kernel.cubin", dir);
  snprintf(arch, sizeof arch, "-arch=%s", kb->target);
  static const char *const files[] = {"kernel.ptx", "kernel.cubin"};
  if (write_file(in, kb->ptx, strlen(kb->ptx))) {
    diag_plain(diag, "cannot write %s", in);
    remove_tmpdir(dir, files, 2);
    return -1;
  }
  char *argv[] = {be->ptxas, arch, "-O3", "-v", in, "-o", out, NULL};
  Buf log;
  buf_init(&log);
  int rc = run_tool(argv, dir, &log);
  if (rc != 0) {
    if (access(be->ptxas, X_OK) != 0)
      diag_plain(diag, "ptxas not found at %s: install the CUDA 13.0 toolkit or set CAKE_CUDA_ROOT", be->ptxas);
    else
      diag_plain(diag, "ptxas failed for %s (%s):\n%s", kb->symbol, kb->target, log.data ? log.data : "");
    buf_free(&log);
    remove_tmpdir(dir, files, 2);
    return -1;
  }
  parse_ptxas_report(log.data ? log.data : "", kb);
  buf_free(&log);
  kb->cubin = read_file(out, &kb->cubin_len);
  remove_tmpdir(dir, files, 2);
  if (!kb->cubin) {
    diag_plain(diag, "ptxas produced no cubin for %s", kb->symbol);
    return -1;
  }
  return 0;
}

int backend_fatbin(Backend *be, Diag *diag, const KernelBinary *bins, int n, unsigned char **outp, size_t *len) {
  char dir[1100];
  if (make_tmpdir(dir, sizeof dir)) {
    diag_plain(diag, "cannot create a temporary directory: %s", strerror(errno));
    return -1;
  }
  char *argv[64];
  char imgs[CAKE_MAX_TARGETS][2600], names[CAKE_MAX_TARGETS][64], create[1300];
  const char *files[CAKE_MAX_TARGETS + 1];
  CAKE_ASSERT(n <= CAKE_MAX_TARGETS);
  int na = 0, nf = 0;
  argv[na++] = be->fatbinary;
  argv[na++] = "-64";
  argv[na++] = "--compress=false";
  snprintf(create, sizeof create, "--create=%s/kernel.fatbin", dir);
  argv[na++] = create;
  for (int i = 0; i < n; i++) {
    const KernelBinary *kb = &bins[i];
    const char *sm = (kb->cubin ? kb->target : kb->ptx_target) + 3; /* "90a" */
    snprintf(names[i], sizeof names[i], "image%d.%s", i, kb->cubin ? "cubin" : "ptx");
    char path[2200];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    files[nf++] = names[i]; /* removed with the directory, written or not */
    int w = kb->cubin ? write_file(path, kb->cubin, kb->cubin_len) : write_file(path, kb->ptx, strlen(kb->ptx));
    if (w) {
      diag_plain(diag, "cannot write %s", path);
      remove_tmpdir(dir, files, nf);
      return -1;
    }
    snprintf(imgs[i], sizeof imgs[i], "--image3=kind=%s,sm=%s,file=%s", kb->cubin ? "elf" : "ptx", sm, path);
    argv[na++] = imgs[i];
  }
  argv[na] = NULL;
  files[nf++] = "kernel.fatbin";
  Buf log;
  buf_init(&log);
  int rc = run_tool(argv, dir, &log);
  if (rc != 0) {
    diag_plain(diag, "fatbinary failed (%s):\n%s", be->fatbinary, log.data ? log.data : "");
    buf_free(&log);
    remove_tmpdir(dir, files, nf);
    return -1;
  }
  buf_free(&log);
  char out[1200];
  snprintf(out, sizeof out, "%s/kernel.fatbin", dir);
  *outp = read_file(out, len);
  remove_tmpdir(dir, files, nf);
  if (!*outp) {
    diag_plain(diag, "fatbinary produced no output");
    return -1;
  }
  return 0;
}

/* ---- MLIR -> LLVM -> PTX ---- */

static char *print_op(MlirOperation op, int debuginfo) {
  Buf b;
  buf_init(&b);
  MlirOpPrintingFlags fl = mlirOpPrintingFlagsCreate();
  if (debuginfo) mlirOpPrintingFlagsEnableDebugInfo(fl, true, false); /* re-parseable: loc aliases */
  mlirOperationPrintWithFlags(op, fl, append_cb, &b);
  mlirOpPrintingFlagsDestroy(fl);
  buf_puts(&b, "\n");
  return buf_take(&b);
}

static char *emit_ptx(Diag *diag, LLVMModuleRef lm, const char *cpu, char **llvm_text) {
  char *err = NULL;
  LLVMTargetRef tgt;
  if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &tgt, &err)) {
    diag_plain(diag, "LLVM has no NVPTX target: %s", err);
    LLVMDisposeMessage(err);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(tgt, "nvptx64-nvidia-cuda", cpu, PTX_FEATURES,
                                                    LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                                    LLVMCodeModelDefault);
  LLVMSetTarget(lm, "nvptx64-nvidia-cuda");
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(lm, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(lm, LLVM_PIPELINE, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    diag_plain(diag, "LLVM optimisation failed: %s", m);
    LLVMDisposeErrorMessage(m);
    LLVMDisposeTargetMachine(tm);
    return NULL;
  }
  if (llvm_text) {
    char *s = LLVMPrintModuleToString(lm);
    *llvm_text = strdup(s);
    LLVMDisposeMessage(s);
  }
  LLVMMemoryBufferRef mb;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, lm, LLVMAssemblyFile, &err, &mb)) {
    diag_plain(diag, "NVPTX code generation failed: %s", err);
    LLVMDisposeMessage(err);
    LLVMDisposeTargetMachine(tm);
    return NULL;
  }
  size_t n = LLVMGetBufferSize(mb);
  char *ptx = cake_xmalloc(n + 1);
  memcpy(ptx, LLVMGetBufferStart(mb), n);
  ptx[n] = 0;
  LLVMDisposeMemoryBuffer(mb);
  LLVMDisposeTargetMachine(tm);
  return ptx;
}

static int assemble(Backend *be, Diag *diag, KernelBinary *kb) {
  if (!backend_can_assemble(be, kb->target)) {
    char note[256];
    snprintf(note, sizeof note,
             "this ptxas cannot make an %s cubin; the fatbin carries %s PTX for the driver to compile", kb->target,
             kb->ptx_target);
    kb->note = strdup(note);
    return 0;
  }
  if (run_ptxas(be, diag, kb)) return -1;
  /* Two blocks per SM cap the registers at half the file; when that spills,
   * one block per SM (and the full register file) is the better trade. */
  char *two = strstr(kb->ptx, TWO_PER_SM);
  if (kb->spill_bytes > 0 && two) {
    two[sizeof TWO_PER_SM - 2] = '1';
    free(kb->cubin);
    kb->cubin = NULL;
    kb->registers = kb->spill_bytes = kb->stack_bytes = 0;
    return run_ptxas(be, diag, kb);
  }
  return 0;
}

int backend_assemble(Backend *be, Diag *diag, KernelBinary *kb) {
  double t0 = backend_tool_seconds();
  int rc = assemble(be, diag, kb);
  kb->seconds[2] += backend_tool_seconds() - t0;
  return rc;
}

int backend_compile(Backend *be, Arena *arena, Diag *diag, const CirProgram *p, const CirKernel *k,
                    const KernelAbi *abi, const char *const *targets, int n, const char *symbol, EmitKind stop,
                    KernelBinary *out) {
  CAKE_ASSERT(n >= 1);
  memset(out, 0, sizeof *out * (size_t)n);
  Buf view;
  buf_init(&view);
  backend_view_key(targets[0], &view);
  for (int i = 0; i < n; i++) {
    out[i].target = targets[i];
    out[i].ptx_target = backend_ptx_target(targets[i]);
    out[i].symbol = strdup(symbol);
    Buf v;
    buf_init(&v);
    backend_view_key(targets[i], &v);
    int same = v.len == view.len && !memcmp(v.data, view.data, v.len);
    buf_free(&v);
    if (!out[i].ptx_target) {
      diag_plain(diag, "unknown target '%s' (known: %s)", targets[i], target_names());
      buf_free(&view);
      return -1;
    }
    CAKE_ASSERT(same); /* one lowering serves only targets of one view */
  }
  buf_free(&view);
  be->diag = diag;
  int errors0 = diag->errors;
  double t0 = cpu_seconds();
  MlirLocation loc = mlirLocationUnknownGet(be->ctx);
  MlirModule mod = mlirModuleCreateEmpty(loc);
  MlirOperation mop = mlirModuleGetOperation(mod);
  mlirOperationSetDiscardableAttributeByName(mop, mlirStringRefCreateFromCString("gpu.container_module"),
                                             mlirUnitAttrGet(be->ctx));
  Target view_t = target_lowering_view(target_get(targets[0]));
  int shared = 0;
  int rc = lower_kernel(arena, diag, be->ctx, mlirModuleGetBody(mod), p, k, abi, &view_t, symbol, &shared);
  if (rc) goto fail;
  if (!mlirOperationVerify(mop)) {
    diag_plain(diag, "internal error: the MLIR built for kernel '%s' does not verify", k->name);
    goto fail;
  }
  if (stop == EMIT_MLIR) {
    char *text = print_op(mop, 1);
    for (int i = 0; i < n; i++) out[i].mlir = i ? strdup(text) : text;
  }
  MlirPassManager pm = mlirPassManagerCreate(be->ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  Buf perr;
  buf_init(&perr);
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(opm, mlirStringRefCreateFromCString(PIPELINE), append_cb, &perr)))
    cake_die("bad pass pipeline: %s", perr.data ? perr.data : "");
  buf_free(&perr);
  MlirLogicalResult pr = mlirPassManagerRunOnOp(pm, mop);
  mlirPassManagerDestroy(pm);
  if (mlirLogicalResultIsFailure(pr)) {
    diag_plain(diag, "the MLIR pass pipeline failed for kernel '%s'", k->name);
    goto fail;
  }
  MlirOperation gmod = mlirBlockGetFirstOperation(mlirModuleGetBody(mod));
  double t1 = cpu_seconds();
  out[0].seconds[0] = t1 - t0;
  LLVMContextRef lctx = LLVMContextCreate();
  LLVMModuleRef lm = mlirTranslateModuleToLLVMIR(gmod, lctx);
  if (!lm) {
    diag_plain(diag, "translation of kernel '%s' to LLVM IR failed", k->name);
    LLVMContextDispose(lctx);
    goto fail;
  }
  /* one translation, optimised and emitted for each PTX target, each from
   * its own copy: a copy's use lists are not in the original's order, and
   * LLVM's choices (induction variables, register numbers) can follow that
   * order, so a target's code must not depend on whether it took the
   * original (how many PTX targets the run compiles) */
  int ok = 1;
  for (int i = 0; i < n && ok; i++) {
    out[i].shared_bytes = shared;
    LLVMModuleRef m = LLVMCloneModule(lm);
    out[i].ptx = emit_ptx(diag, m, out[i].ptx_target, stop == EMIT_LLVM ? &out[i].llvm : NULL);
    LLVMDisposeModule(m);
    double t2 = cpu_seconds();
    out[i].seconds[1] = t2 - t1;
    t1 = t2;
    ok = out[i].ptx != NULL;
  }
  LLVMDisposeModule(lm);
  LLVMContextDispose(lctx);
  if (!ok) goto fail;
  mlirModuleDestroy(mod);
  be->diag = NULL;
  return diag->errors == errors0 ? 0 : -1;
fail:
  mlirModuleDestroy(mod);
  be->diag = NULL;
  return -1;
}
