# shellcheck shell=bash
# analysis/lib_gnuplot.sh: text handed to gnuplot as data, never as commands (sourced by every
# script of analysis/ and experiments/ that writes gnuplot commands). A path, or any string from
# outside the script (a folder the user named, a label read from a file or a database), enters a
# gnuplot command only through these two, never pasted between quotes:
#   gp_str TEXT     a gnuplot string expression whose value is TEXT, whatever TEXT holds: its runs of
#                   plain characters in single quotes, where gnuplot 5.4 substitutes no backquoted
#                   command, expands no @macro and reads no backslash; each single quote and each
#                   control character (a newline would end the command) as an octal escape in
#                   double quotes ("\047", "\012"), joined by gnuplot's '.' ('it'."\047".'s').
#                   Gnuplot's doubled quote ('it''s') is not used: 5.4 misreads two of them in a
#                   row ('a''''b') and one at the start ('''a').
#   gp_file PATH    gp_str of PATH as a file to read or write: a relative path gets "./" in front,
#                   so that gnuplot never takes it for a command ("<CMD" read as data runs CMD,
#                   "|CMD" as the output pipes into CMD) or a home folder ("~/").
# Both print the expression on stdout; any string has one, so neither fails. A script file goes to
# gnuplot on stdin (gnuplot <FILE), never as its argument, which gnuplot too reads as "<CMD".
gp_str() {
    local LC_ALL=C # bytes: a UTF-8 character's bytes are plain, none a control character
    local s=$1 expr="" run="" c i
    if [[ $s != *[\'[:cntrl:]]* ]]; then
        printf "'%s'" "$s"
        return 0
    fi
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        if [[ $c == [\'[:cntrl:]] ]]; then
            [ -z "$run" ] || expr+="${expr:+.}'$run'"
            run=""
            printf -v c '"\\%03o"' "'$c"
            expr+="${expr:+.}$c"
        else
            run+=$c
        fi
    done
    [ -z "$run" ] || expr+="${expr:+.}'$run'"
    printf '%s' "$expr"
}
gp_file() {
    case $1 in
        /*) gp_str "$1" ;;
        *) gp_str "./$1" ;;
    esac
}
