# check.sh - assertions shared by the shell tests (sourced, not run).
#
#   check NAME EXPECTED ACTUAL   prints "ok - NAME", or "not ok - NAME" with
#                                both values, and then sets fail=1
#   q ARGS...                    psql, unaligned and tuples only, stopping
#                                at the first error
# A test ends with "exit $fail".

fail=0

check() {
	if [ "$2" == "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1"
		echo "  expected: $2"
		echo "  actual:   $3"
		fail=1
	fi
}

q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
