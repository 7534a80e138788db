# shellcheck shell=bash
# --html: the html report of a large recording, opened in headless Chromium (issue 32).
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# bench/report_artifact's recording of HTML_EVENTS events (4 processes, 20000 sites): the time
# `memtrack report --format html` takes and the page's size, then tests/unit/html_timing opens the
# page in Debian's chromium and tells, in ms, its load (navigation start to drawn, from the page's
# own clock) and the wall time of each action until the page is laid out again. Medians of REPS.
begin_section "HTML page"
command -v chromium >/dev/null || die "--html needs chromium (apt-get install chromium)"
hdir="$WORK/html"
mkdir -p "$hdir"
"$BIN/report_artifact" "$hdir/big" "$HTML_EVENTS" >"$WORK/log/html_artifact.log" 2>&1 ||
    die "bench/report_artifact failed: $(tail -n 1 "$WORK/log/html_artifact.log")"
page="$hdir/big.html"
for ((REP = 1; REP <= REPS; ++REP)); do
    gnu_timed html.report "$MEMTRACK" report "$hdir/big.MemtrackArtifact.msgpack" --format html -o "$page" ||
        die "memtrack report --format html failed: $(tail -n 1 "$WORK/log/html.report.$REP.log")"
    "$BUILD/tests/unit/html_timing" "$page" >"$WORK/t/html.timing.$REP" 2>"$WORK/log/html.timing.$REP.log" ||
        die "html_timing failed: $(tail -n 1 "$WORK/log/html.timing.$REP.log")"
    # "name ms name ms ...": one file per name.
    read -ra pairs <"$WORK/t/html.timing.$REP"
    for ((i = 0; i < ${#pairs[@]}; i += 2)); do echo "${pairs[i + 1]}" >>"$WORK/t/html.ms.${pairs[i]}"; done
done
echo "bench/report_artifact $HTML_EVENTS: $(cat "$WORK/log/html_artifact.log")"
echo "\`memtrack report ARTIFACT --format html\`: $(fmt "$(median "$WORK/t/html.report.wall")" '%.2f') s wall," \
    "max RSS $(fmt "$(calc "$(median "$WORK/t/html.report.rss") / 1024")" '%.0f') MiB, page $(fmt "$(calc "$(stat -c %s "$page") / 1024")" '%.0f') KiB" \
    "($(grep -o '{"s":\[' "$page" | wc -l) series)."
echo "Chromium $(chromium --version 2>/dev/null | awk '{ print $2 }'), headless, 1200x900; medians of $REPS runs, ms:"
echo
echo "| load | range | leaked | allocated | allocations | temporary | peak | inverted | process | search | whole |"
echo "|-----:|------:|-------:|----------:|------------:|----------:|-----:|---------:|--------:|-------:|------:|"
row="|"
for name in load range leaked allocated allocations temporary peak inverted process search whole; do
    row+=" $(median "$WORK/t/html.ms.$name") |"
done
echo "$row"
end_section
