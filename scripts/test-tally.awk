# Tallies scripts/test's logs: one line per test, "source<TAB>test<TAB>outcome<TAB>reason"
# (outcome passed, failed, skipped, ignored; "crashed" for a binary that stopped before its
# summary, "stray" for a "skipped:" line that names no test of its binary, or a line that
# says "skipped" some other way).
# Each binary's lines are checked against libtest's own summary line ("test result: ok.
# N passed; M failed; K ignored; J measured; F filtered out"): when the tests counted from
# the per-test lines differ from it, one line with outcome "mismatch" says both (a log
# without per-test lines, as --quiet prints, is one); F > 0 gives one line with outcome
# "filtered" and F as its reason.
# Inputs: the tsv of test binaries and their sources, then the logs; -v mainlog=the first
# log, -v mpi_ran=1 when the second log re-ran tests/mpi.rs with the mpi feature: a test
# of that binary then counts once, by its second run when it has one. When the second
# run could not happen, the first run's tests ignored for want of the feature count as
# skipped.
# The number before `what` in a libtest summary line ($0); -1 when it is not there.
function field(what,   m) {
  if (match($0, "[0-9]+ " what)) { m = substr($0, RSTART, RLENGTH); sub(/ .*/, "", m); return m + 0 }
  return -1
}
function base(p) { sub(/.*\//, "", p); return p }
function emit(t, line) {
  if (hold) held[t] = line
  else {
    print line
    if (mpi_block) rerun[t] = 1
  }
}
function finish(   t, i, r) {
  if (block == "") return
  if (!summary) emit("-", label "\t-\tcrashed\tthe binary stopped before its summary")
  np = 0; nf = 0; ni = 0; nm = 0
  for (t in outcome) {
    if (outcome[t] == "ok") np++
    else if (outcome[t] == "FAILED") nf++
    else if (outcome[t] ~ /^bench:/) nm++
    else ni++
  }
  if (summary && (np != s_passed || nf != s_failed || ni != s_ignored || nm != s_measured))
    emit("-mismatch", label "\t-\tmismatch\tlibtest's summary says " s_passed " passed, " s_failed " failed, " s_ignored " ignored, " s_measured " measured; its per-test lines say " np ", " nf ", " ni ", " nm)
  if (summary && s_filtered > 0) emit("-filtered", label "\t-\tfiltered\t" s_filtered)
  for (t in outcome) {
    if (outcome[t] ~ /^bench:/) {
      emit(t, label "\t" t "\tmeasured\t")
    } else if (outcome[t] == "ok") {
      if (t in skip) emit(t, label "\t" t "\tskipped\t" skip[t])
      else emit(t, label "\t" t "\tpassed\t")
    } else if (outcome[t] == "FAILED") {
      emit(t, label "\t" t "\tfailed\t")
    } else {
      r = outcome[t]; sub(/^ignored,? ?/, "", r)
      if (mpi_block && mpi_ran == 0 && r ~ /mpi feature/)
        emit(t, label "\t" t "\tskipped\tneeds mpicc and mpirun (libopenmpi-dev, openmpi-bin)")
      else emit(t, label "\t" t "\tignored\t" r)
    }
  }
  for (t in skip) if (!(t in outcome)) emit(t, label "\t" t "\tstray\t" skip[t])
  for (i = 1; i <= nstray; i++) emit("-" i, label "\t-\tstray\t" stray[i])
  delete outcome; delete skip; delete stray; nstray = 0; block = ""
}
FILENAME ~ /\.tsv$/ { split($0, f, "\t"); src[base(f[1])] = f[2]; next }
/^ +Running / {
  finish()
  exe = $0; sub(/.*\(/, "", exe); sub(/\).*/, "", exe)
  block = base(exe); summary = 0
  label = (block in src) ? src[block] : exe
  mpi_block = (label ~ /tests\/mpi\.rs$/)
  hold = (FILENAME == mainlog && mpi_ran == 1 && mpi_block)
  next
}
block != "" && /^test .* \.\.\. / {
  t = $0; sub(/^test /, "", t); o = t
  sub(/ \.\.\. .*/, "", t); sub(/ - should panic$/, "", t)
  sub(/.* \.\.\. /, "", o)
  outcome[t] = o
  next
}
block != "" && /^test result: / {
  summary = 1
  s_passed = field("passed"); s_failed = field("failed"); s_ignored = field("ignored")
  s_measured = field("measured"); s_filtered = field("filtered out")
  next
}
/^skipped: / {
  s = $0; sub(/^skipped: /, "", s)
  n = index(s, ": ")
  if (block != "" && n > 0) {
    t = substr(s, 1, n - 1)
    if (t in skip) { stray[++nstray] = s " (a second skip in one test)"; next }
    skip[t] = substr(s, n + 2)
  } else {
    stray[++nstray] = s
  }
  next
}
# A skip said some other way ("skipped (a case): ...") is not counted: it is reported.
/^skipped[^:]/ { stray[++nstray] = $0; next }
END {
  finish()
  for (t in held) if (!(t in rerun)) print held[t]
}
