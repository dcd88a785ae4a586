# SPDX-License-Identifier: GPL-2.0
"""An independent pprof decoder: the protobuf wire format read by hand
(varints, length-delimited fields), for checking spanperf's encoder."""
import gzip


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        if c < 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long at %d" % i)


def fields(b):
    """Yields (field, wire type, value): ints for varints, bytes for length-delimited."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("field %d runs past the end" % f)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def _packed(v, wt):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def decode(path):
    raw = gzip.open(path).read()
    p = {"sample_type": [], "sample": [], "mapping": [], "location": {}, "function": {}, "strings": []}
    for f, wt, v in fields(raw):
        if f == 1:
            d = dict((k, x) for k, _, x in fields(v))
            p["sample_type"].append((d.get(1, 0), d.get(2, 0)))
        elif f == 2:
            s = {"loc": [], "value": [], "labels": []}
            for k, w, x in fields(v):
                if k == 1:
                    s["loc"] += _packed(x, w)
                elif k == 2:
                    s["value"] += _packed(x, w)
                elif k == 3:
                    s["labels"].append(dict((kk, xx) for kk, _, xx in fields(x)))
            p["sample"].append(s)
        elif f == 3:
            p["mapping"].append(dict((k, x) for k, _, x in fields(v)))
        elif f == 4:
            d = {"line": []}
            for k, _, x in fields(v):
                if k == 4:
                    d["line"].append(dict((kk, xx) for kk, _, xx in fields(x)))
                else:
                    d[k] = x
            p["location"][d[1]] = d
        elif f == 5:
            d = dict((k, x) for k, _, x in fields(v))
            p["function"][d[1]] = d
        elif f == 6:
            p["strings"].append(v.decode())
    s = p["strings"]
    if not s or s[0] != "":
        raise ValueError("string table must start with the empty string")
    p["sample_type"] = [(s[t], s[u]) for t, u in p["sample_type"]]
    for fn in p["function"].values():
        fn["name_str"] = s[fn.get(2, 0)]
    return p


def flat_by_function(p, index=0):
    """Value `index` summed by the leaf function of each sample."""
    out = {}
    for smp in p["sample"]:
        loc = p["location"][smp["loc"][0]]
        name = p["function"][loc["line"][0][1]]["name_str"]
        out[name] = out.get(name, 0) + smp["value"][index]
    return out
