#!/bin/bash
# optsched's node Prolog (slurm.conf: Prolog=/path/to/prolog.sh): sets the power cap optsched planned for the
# job on the GPUs Slurm gave it, before the job starts. slurmd runs it as root on the node, with SLURM_JOB_ID,
# SLURMD_NODENAME, SLURM_JOB_COMMENT and CUDA_VISIBLE_DEVICES (not the job's own environment). The cap comes
# from the comment `optsched apply` writes: "optsched:...,powercap=300" (every node) or
# "powercap=n1@300/n2@250" (per node). Where nvidia-smi exists it sets the cap; where it does not, it only
# records what it would do. Each job gets one line in the log: OPTSCHED_PROLOG_LOG, read from
# optsched-prolog.conf beside slurm.conf, else /var/log/optsched-prolog.log.
# It always exits 0: a failing Prolog drains the node, which is worse than a job at its default cap.

conf_dir=$(dirname "${SLURM_CONF:-/etc/slurm/slurm.conf}")
log=/var/log/optsched-prolog.log
if [ -r "$conf_dir/optsched-prolog.conf" ]; then
    configured=$(sed -n 's/^OPTSCHED_PROLOG_LOG=//p' "$conf_dir/optsched-prolog.conf" | tail -n 1)
    log=${configured:-$log}
fi

comment=${SLURM_JOB_COMMENT:-}
cap=""
case "$comment" in
    *optsched:*powercap=*)
        value=${comment##*powercap=}
        value=${value%%,*}
        if [[ $value == *@* ]]; then
            for entry in ${value//\// }; do
                [ "${entry%@*}" = "${SLURMD_NODENAME:-}" ] && cap=${entry#*@}
            done
        else
            cap=$value
        fi
        ;;
esac
[[ $cap =~ ^[0-9]+$ ]] || cap=""

gpus=${CUDA_VISIBLE_DEVICES:-${SLURM_JOB_GPUS:-}}
if [ -z "$cap" ]; then
    action="none"
elif [ -z "$gpus" ]; then
    action="no-gpus"
elif command -v nvidia-smi >/dev/null 2>&1; then
    if nvidia-smi -i "$gpus" -pl "$cap" >/dev/null 2>&1; then action="applied"; else action="failed"; fi
else
    action="would-run: nvidia-smi -i $gpus -pl $cap"
fi
printf 'job=%s node=%s gpus=%s powercap=%s action=%s\n' \
    "${SLURM_JOB_ID:-}" "${SLURMD_NODENAME:-}" "$gpus" "${cap:-none}" "$action" >> "$log" 2>/dev/null
exit 0
