# shellcheck shell=bash
# eta.sh: the time a batch of runs has left, on their progress lines (sourced by experiments/lib/sweep.sh
# and experiments/papers.sh).
#   eta_lines TODO   copies its input to its output a line at a time; each line that ends a run (it
#                    holds " done") counts one of TODO, and while some are left it gets the time they
#                    should take at the pace so far: " (about 2 min 10 s left)"
eta_lines() {
    local todo=$1 done=0 t0=$SECONDS line left
    while IFS= read -r line; do
        if [[ $line == *" done"* ]]; then
            done=$((done + 1))
            left=$(((SECONDS - t0) * (todo - done) / done))
            if [ "$done" -lt "$todo" ] && [ "$left" -gt 0 ]; then
                if [ "$left" -ge 60 ]; then line+=" (about $((left / 60)) min $((left % 60)) s left)"
                else line+=" (about $left s left)"; fi
            fi
        fi
        printf '%s\n' "$line"
    done
}
