#!/usr/bin/env bash
# Emulate PrairieLearn's external grader on this machine, as faithfully as a chroot allows,
# and run one grading job of the question `cs336-grade prairielearn` wrote.
#
# What PrairieLearn does (its repository: apps/grader-host/src/index.ts, the job's run;
# apps/prairielearn/src/lib/externalGraderCommon.ts, buildDirectory and makeGradingResult;
# docs/externalGrading.md), and what each step here mirrors:
#   job directory  /grade: serverFilesCourse/<the question's serverFilesCourse entries>,
#                  shared/ (the same, its older name), tests/ (the question's, if any),
#                  student/<each uploaded file>, data/data.json (params, submitted
#                  answers, variant_seed, ...), made fresh for every job        -> step 1
#   container      a fresh container of the course's image, /grade bound in, the image's
#                  user (root) with Docker's default capabilities, no network
#                  (NetworkDisabled), a private IPC namespace, 2 GiB of memory and as
#                  much with swap, 0.9 of a CPU (CpuQuota 90000/100000), 1024 processes,
#                  no core dumps; the entrypoint made executable, then run           -> step 2
#   results        killed at the question's timeout; read only from a container that
#                  exited 0: /grade/results/results.json, at most 1 MB, JSON     -> step 3
# The image: this machine's Debian 12 (the base of python:3.12-slim-bookworm, the
# Dockerfile's) read-only, with the environment at /opt/cs336/.venv (IMAGE_VENV: default
# this checkout's .venv, built from the same uv.lock as the Dockerfile's) and its
# interpreter. Not emulated: Docker's seccomp profile (here the chroot is what refuses the
# user namespaces bubblewrap asks for, as the profile does there) and PrairieLearn's own
# hosts' kernel.
#
# Usage, as root, from the repository's root:
#   tests/platforms/emulate_prairielearn.sh COURSE UPLOAD LABEL
# COURSE: the folder `cs336-grade prairielearn` wrote; UPLOAD: a file the student uploads
# (a zip), or a folder whose files are uploaded as they lie; LABEL names the run's outputs.
# Env: VARIANT_SEED (default 1234; the student's variant), MEM (2g), CPU (0.9), PIDS (1024),
# TIMEOUT (info.json's), WORK (/tmp/prairielearn-emulator), IMAGE_VENV.
# Outputs: $WORK/out/LABEL/{results.json,log,meta.txt,check.txt}.
set -euo pipefail

course=$(realpath "$1"); upload=$(realpath "$2"); label=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/tmp/prairielearn-emulator}
MEM=${MEM:-2g}; CPU=${CPU:-0.9}; PIDS=${PIDS:-1024}
venv=$(realpath "${IMAGE_VENV:-$here/.venv}")
python=$(readlink -f "$venv/bin/python")
python_home=$(cd "$(dirname "$python")/.." && pwd)
info=$(ls "$course"/questions/*/info.json | head -1)
question=$(dirname "$info")
read -r timeout entrypoint files < <(python3 - "$info" <<'PY'
import json, sys
options = json.load(open(sys.argv[1]))["externalGradingOptions"]
print(options.get("timeout", 30), options["entrypoint"], ",".join(options.get("serverFilesCourse", [])))
PY
)
TIMEOUT=${TIMEOUT:-$timeout}
job="$WORK/jobs/$label"; layer="$WORK/layers/$label"; root="$WORK/roots/$label"
out="$WORK/out/$label"
rm -rf "$job" "$layer" "$out"
mkdir -p "$job"/{serverFilesCourse,tests,student,data} "$layer" "$root" "$out"

# 1. The job directory, as buildDirectory makes it.
IFS=, read -r -a entries <<<"$files"
for entry in "${entries[@]}"; do
  mkdir -p "$(dirname "$job/serverFilesCourse/${entry%/}")"
  cp -a "$course/serverFilesCourse/${entry%/}" "$job/serverFilesCourse/${entry%/}"
done
cp -a "$job/serverFilesCourse" "$job/shared"
[[ -d "$question/tests" ]] && cp -a "$question/tests/." "$job/tests/"
if [[ -d "$upload" ]]; then cp -a "$upload/." "$job/student/"; else cp "$upload" "$job/student/"; fi
python3 - "$job" "${VARIANT_SEED:-1234}" <<'PY'
import base64, json, os, sys
job, seed = sys.argv[1], int(sys.argv[2])
student = os.path.join(job, "student")
files = [
    {"name": os.path.relpath(os.path.join(d, f), student),
     "contents": base64.b64encode(open(os.path.join(d, f), "rb").read()).decode()}
    for d, _, names in os.walk(student) for f in names
]
data = {"params": {}, "correct_answers": {}, "submitted_answers": {"_files": files},
        "format_errors": {}, "partial_scores": {}, "score": 0, "feedback": {},
        "variant_seed": seed, "options": {}, "raw_submitted_answers": {}, "gradable": True}
json.dump(data, open(os.path.join(job, "data", "data.json"), "w"))
PY

# 2. The container: namespaces, a root of the image's parts, the cgroup's limits, Docker's
# capabilities; killed at the timeout.
group="pl-emu-$$"
for controller in memory cpu pids; do mkdir -p "/sys/fs/cgroup/$controller/$group"; done
echo "$MEM" > "/sys/fs/cgroup/memory/$group/memory.limit_in_bytes"
echo "$MEM" > "/sys/fs/cgroup/memory/$group/memory.memsw.limit_in_bytes" 2>/dev/null || true
echo 100000 > "/sys/fs/cgroup/cpu/$group/cpu.cfs_period_us"
quota=$(python3 -c "print(int($CPU * 100000))")  # Python's own write would seek, which cgroup files refuse
echo "$quota" > "/sys/fs/cgroup/cpu/$group/cpu.cfs_quota_us"
echo "$PIDS" > "/sys/fs/cgroup/pids/$group/pids.max"
docker_caps="-all,+chown,+dac_override,+fsetid,+fowner,+mknod,+net_raw,+setgid,+setuid,+setfcap,+setpcap,+net_bind_service,+sys_chroot,+kill,+audit_write"
inside=$(cat <<SH
set -e
mount --bind "$layer" "$root"
for d in usr etc; do mkdir -p "$root/\$d"; mount --rbind -o ro "/\$d" "$root/\$d"; mount -o remount,bind,ro "$root/\$d"; done
for link in bin lib lib64 sbin; do ln -sfn "usr/\$link" "$root/\$link"; done
mkdir -p "$root/opt/cs336/.venv" "$root$python_home" "$root/grade" "$root/proc" "$root/dev" "$root/sys" "$root/var/tmp"
mkdir -p -m 1777 "$root/tmp"; chmod 1777 "$root/var/tmp"; chmod 0755 "$root/opt" "$root/opt/cs336"
chmod 0711 "$root/root" 2>/dev/null || true
mount --bind -o ro "$venv" "$root/opt/cs336/.venv"; mount -o remount,bind,ro "$root/opt/cs336/.venv"
mount --bind -o ro "$python_home" "$root$python_home"; mount -o remount,bind,ro "$root$python_home"
mount --bind "$job" "$root/grade"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
for m in \$(findmnt -R -n -l -o TARGET "$root/sys" | sort -r); do mount -o remount,bind,ro "\$m"; done
ip link set lo up 2>/dev/null || true
chmod +x "$root$entrypoint"
ulimit -c 0
exec setpriv --bounding-set="$docker_caps" --inh-caps=-all chroot "$root" /usr/bin/env -i \
  HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  UV_NO_CACHE=1 UV_PYTHON_PREFERENCE=only-system "$entrypoint"
SH
)
start=$(date +%s.%N)
set +e
(
  for controller in memory cpu pids; do echo $BASHPID > "/sys/fs/cgroup/$controller/$group/cgroup.procs"; done
  exec timeout --signal=KILL "$TIMEOUT" unshare --mount --pid --net --ipc --uts --fork --kill-child \
    --propagation private bash -c "$inside"
) > "$out/log" 2>&1
rc=$?
set -e
wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
peak=$(cat "/sys/fs/cgroup/memory/$group/memory.max_usage_in_bytes")
oom=$(cat "/sys/fs/cgroup/memory/$group/memory.failcnt")
for controller in memory cpu pids; do rmdir "/sys/fs/cgroup/$controller/$group" 2>/dev/null || true; done

# 3. What PrairieLearn reads back.
{
  echo "exit=$rc wall=${wall}s timeout=${TIMEOUT}s MEM=$MEM CPU=$CPU PIDS=$PIDS peak_memory_bytes=$peak memory_failcnt=$oom"
  echo "variant_seed=${VARIANT_SEED:-1234} image_venv=$venv"
} > "$out/meta.txt"
if [[ $rc -eq 137 ]]; then
  echo "killed at the timeout: PrairieLearn shows 'did not complete within the time limit'" > "$out/check.txt"
elif [[ $rc -ne 0 ]]; then
  echo "exit $rc: PrairieLearn reads no results from a container that did not exit 0" > "$out/check.txt"
elif [[ ! -f "$job/results/results.json" ]]; then
  echo "no results.json: PrairieLearn says 'Could not read grading results.'" > "$out/check.txt"
else
  cp "$job/results/results.json" "$out/results.json"
  (cd "$here" && "$venv/bin/python" -m tests.platforms.prairielearn_results "$out/results.json") > "$out/check.txt" 2>&1 || true
fi
cat "$out/meta.txt" "$out/check.txt"
