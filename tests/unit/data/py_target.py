# A CPython process for tests/unit/test_py_code.c to read from outside: it prints what a
# recorder would know of it (its version, PyCode_Type and its member offsets, the types the
# 3.8-3.10 name walk looks for) and, for each code object of a known structure, its address and
# what CPython itself says of it (names as UTF-8 hex, first line, code units, and the line
# PyCode_Addr2Line gives every instruction).  Then it waits until its stdin closes.
#
# Runs under every CPython 3.8-3.13; argv[1]: a folder to write its module into.
import ctypes
import os
import sys
import types

V = sys.version_info[:2]
SRC = '''
def top(x):
    y = x + 1
    return y

class Klass:
    def method(self):
        return 1
    @staticmethod
    def smeth():
        return 2
    @classmethod
    def cmeth(cls):
        return 3
    @property
    def prop(self):
        return 4
    class Inner:
        def deep(self):
            return 5

def outer():
    def inner():
        return 6
    return inner

def factory():
    class Local:
        def m(self):
            return 7
    return Local

def listy(v):
    return [a * 2 for a in v]

def gen(n):
    for i in range(n):
        yield i

lam = lambda q: q
'''

folder = sys.argv[1]
path = os.path.join(folder, "pytarget_mod.py")
with open(path, "w") as f:
    f.write(SRC)
sys.path.insert(0, folder)
import pytarget_mod as m  # noqa: E402


def const(code, name):
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    raise SystemExit("no %s in %s" % (name, code.co_name))


codes = [
    ("top", m.top.__code__),
    ("Klass.method", m.Klass.method.__code__),
    ("Klass.smeth", m.Klass.__dict__["smeth"].__func__.__code__),
    ("Klass.cmeth", m.Klass.__dict__["cmeth"].__func__.__code__),
    ("Klass.prop", m.Klass.__dict__["prop"].fget.__code__),
    ("Klass.Inner.deep", m.Klass.Inner.deep.__code__),
    ("outer", m.outer.__code__),
    ("outer.<locals>.inner", const(m.outer.__code__, "inner")),
    ("factory", m.factory.__code__),
    ("factory.<locals>.Local", const(m.factory.__code__, "Local")),
    ("factory.<locals>.Local.m", const(const(m.factory.__code__, "Local"), "m")),
    ("listy", m.listy.__code__),
    ("gen", m.gen.__code__),
    ("<lambda>", m.lam.__code__),
]
if V < (3, 12):  # inlined from 3.12 on
    codes.append(("listy.<locals>.<listcomp>", const(m.listy.__code__, "<listcomp>")))

# Strings of every kind: latin-1, UCS-2, UCS-4, a NUL, a lone surrogate; and one past the cap.
WEIRD = "m\xe9thode\u51fd\U0001d4bb\x00z\udcff"
WFILE = "/tmp/\xfcn\xef dir/\u6587.py"
kw = dict(co_name=WEIRD, co_filename=WFILE)
if V >= (3, 11):
    kw["co_qualname"] = "K." + WEIRD
weird = m.top.__code__.replace(**kw)
LONG = "L" * 3000
kw = dict(co_name=LONG)
if V >= (3, 11):
    kw["co_qualname"] = LONG
long_ = m.top.__code__.replace(**kw)
codes.append(("K." + WEIRD if V >= (3, 11) else WEIRD, weird))
codes.append((LONG, long_))

for want, co in codes:
    if V >= (3, 11) and co.co_qualname != want:
        raise SystemExit("co_qualname %r, expected %r" % (co.co_qualname, want))


def utf8hex(s):
    return "".join("\ufffd" if c == "\0" or 0xD800 <= ord(c) <= 0xDFFF else c for c in s).encode().hex()


addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int
ct = id(types.CodeType)
members = ctypes.c_void_p.from_address(ct + 240).value
main_interp = ctypes.pythonapi.PyInterpreterState_Main
main_interp.restype = ctypes.c_void_p
out = ["version %#x" % (V[0] << 8 | V[1]), "code_type %#x" % ct,
       "basicsize %d" % ctypes.c_ssize_t.from_address(ct + 32).value,
       "interp %#x" % main_interp(),
       "types %#x %#x %#x %#x %#x" % (id(types.FunctionType), id(staticmethod), id(classmethod),
                                       id(property), id(dict))]
for i in range(64):
    name = ctypes.c_char_p.from_address(members + 40 * i).value
    if not name:
        break
    out.append("member %s %d" % (name.decode(), ctypes.c_ssize_t.from_address(members + 40 * i + 16).value))
for want, co in codes:
    units = len(co.co_code) // 2
    lines = ",".join(str(addr2line(co, 2 * i)) for i in range(-1, units))
    out.append("code %#x %s %s %s %d %d %s" % (id(co), utf8hex(want), utf8hex(co.co_name),
                                                utf8hex(co.co_filename), co.co_firstlineno, units, lines))
# Not a code object: a str.
out.append("notcode %#x" % id(WFILE))
out.append("ready")
sys.stdout.write("\n".join(out) + "\n")
sys.stdout.flush()
sys.stdin.read()
