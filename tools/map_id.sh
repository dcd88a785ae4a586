# Sourced by the by-turns tools (ehkeep_turns.sh, sample_turns.sh): id_of NAME prints the id of
# the BPF map called NAME that the recorder whose pid is in $RP holds open (its fdinfo), so a
# tool reads its own recorder's maps and not another recorder's on a shared host.
id_of() {
	python3 - "$RP" "$1" <<'PY'
import json, os, subprocess, sys
pid, name = sys.argv[1], sys.argv[2]
ids = set()
for fd in os.listdir("/proc/%s/fdinfo" % pid):
    try:
        for line in open("/proc/%s/fdinfo/%s" % (pid, fd)):
            if line.startswith("map_id:"):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
for i in sorted(ids):
    m = json.loads(subprocess.run(["bpftool", "map", "show", "id", str(i), "-j"], capture_output=True,
                                  text=True).stdout or "{}")
    if m.get("name") == name:
        print(i)
        break
PY
}
