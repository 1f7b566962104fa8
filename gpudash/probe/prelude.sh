# gpudash section prelude: helpers every section body may use (POSIX sh).
# Lists from config arrive newline-separated; split only on newlines.
GD_NL='
'
# part NAME CMD...  run CMD (a command or shell function) as the named part of this section.
part() {
  _gd_n=$1; shift
  printf '@@gpudash:%s:part:%s\n' "$GPUDASH_NONCE" "$_gd_n"
  "$@" 2>&1
  _gd_rc=$?
  printf '\n@@gpudash:%s:rc:%s:%s\n' "$GPUDASH_NONCE" "$_gd_n" "$_gd_rc"
}
# have TOOL  true when TOOL is on PATH.
have() { command -v "$1" >/dev/null 2>&1; }
# need TOOL  print "TOOL: not found" and fail (rc 127) when TOOL is missing.
need() { have "$1" || { echo "$1: not found"; return 127; }; }
# gd_expand PATTERN [FUNC]  the paths a configured pattern names: a leading ~ is $HOME, globs
# expand, nothing is eval'ed. Each is printed, or passed to FUNC (no pipe, no subshell).
gd_expand() {
  _gd_p=$1
  case $_gd_p in "~") _gd_p=$HOME ;; "~/"*) _gd_p=$HOME/${_gd_p#"~/"} ;; esac
  _gd_ifs=$IFS; IFS=$GD_NL
  for _gd_f in $_gd_p; do
    IFS=$_gd_ifs
    [ -e "$_gd_f" ] || continue
    if [ -n "${2:-}" ]; then "$2" "$_gd_f" </dev/null; else printf '%s\n' "$_gd_f"; fi
  done
  IFS=$_gd_ifs
}
