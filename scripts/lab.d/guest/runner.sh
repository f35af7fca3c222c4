# Runs every script in /lab/run in name order, each under its own time limit
# ($LAB_TEST_TIMEOUT seconds), logging to /results/NAME.log. A script passes with exit 0 and
# skips with 77 (its last line says why). Prints one "LAB-RESULT" line per script and exits
# non-zero if any failed.
limit="${LAB_TEST_TIMEOUT:-600}"
failed=0
for t in /lab/run/*; do
  name="$(basename "$t")"
  start="$(date +%s)"
  echo "lab: --- $name"
  { timeout -s KILL "$limit" sh "$t"; echo $? > /tmp/rc; } 2>&1 \
    | tee "/results/$name.log" | sed "s/^/  /"
  rc="$(cat /tmp/rc)"
  secs=$(( $(date +%s) - start ))
  case $rc in
    0) verdict=pass ;;
    77) verdict="skip: $(tail -n1 "/results/$name.log")" ;;
    137) verdict="FAIL (killed after ${limit}s)"; failed=1 ;;
    *) verdict="FAIL (exit $rc)"; failed=1 ;;
  esac
  echo "LAB-RESULT $name ${secs}s $verdict" | tee -a /results/summary
done
exit $failed
