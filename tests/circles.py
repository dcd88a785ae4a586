#!/usr/bin/env python3
"""No circle among user/'s files: none includes or calls another that leads back to it.

A node is user/FOLDER/NAME, its .c and its .h together.  A -> B when A.c or
A.h includes B.h, or when A's object (in the build folder) leaves a symbol
undefined that B's object defines.  The folders' order (the Makefile's
INC_* sets) already keeps includes from going the wrong way between
folders; this keeps the files of one folder from leading back to each
other, so that each can be read, tested and replaced without the others.

Run by tests/layout.sh after the objects are built.  Prints each circle
with the files that form it and one way round it, edge by edge; exits 1 if
there is any (or an object is missing: calls could not be read).

usage: circles.py [--root DIR] [--build DIR]   (defaults: the tree, DIR/build)
"""
import argparse
import os
import re
import subprocess
import sys
from collections import deque

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_nodes(root):
    """node -> its files; header base name -> node (names are unique across user/)."""
    nodes, by_header = {}, {}
    user = os.path.join(root, 'user')
    for folder in sorted(os.listdir(user)):
        path = os.path.join(user, folder)
        if not os.path.isdir(path):
            continue
        for f in sorted(os.listdir(path)):
            stem, ext = os.path.splitext(f)
            if ext not in ('.c', '.h'):
                continue
            node = folder + '/' + stem
            nodes.setdefault(node, []).append(os.path.join(path, f))
            if ext == '.h':
                by_header[f] = node
    return nodes, by_header


def symbols(obj):
    """(defined, undefined) global symbols of an object, by nm's portable format."""
    out = subprocess.run(['nm', '-P', '-g', obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        (undefined if parts[1] in 'Uw' else defined).add(parts[0])
    return defined, undefined


def read_edges(root, build, nodes, by_header):
    """edges[a][b] = why a leads to b (the first reason found)."""
    edges = {n: {} for n in nodes}
    missing = []
    for node, files in nodes.items():
        for f in files:
            with open(f, errors='replace') as fh:
                for inc in INCLUDE.findall(fh.read()):
                    to = by_header.get(os.path.basename(inc))
                    if to and to != node:
                        edges[node].setdefault(to, 'includes ' + os.path.basename(inc))
    defined_by, undefined = {}, {}
    for node, files in nodes.items():
        if not any(f.endswith('.c') for f in files):
            continue
        obj = os.path.join(build, node + '.o')
        if not os.path.exists(obj):
            missing.append(obj)
            continue
        d, u = symbols(obj)
        undefined[node] = u
        for s in d:
            defined_by[s] = node
    for node, us in undefined.items():
        for s in sorted(us):
            to = defined_by.get(s)
            if to and to != node:
                edges[node].setdefault(to, 'calls ' + s)
    return edges, missing


def circles(edges):
    """The strongly connected components of more than one node (Tarjan's, without recursion)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def way_round(edges, comp):
    """The shortest way from the circle's first file back to it, inside the circle."""
    first, inside = comp[0], set(comp)
    prev, queue = {}, deque([first])
    while queue:
        v = queue.popleft()
        for w in sorted(edges[v]):
            if w not in inside:
                continue
            if w == first:
                path = [v]
                while path[-1] != first:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [first]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [first]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.dirname(here))
    ap.add_argument('--build')
    a = ap.parse_args()
    build = a.build or os.path.join(a.root, 'build')
    nodes, by_header = read_nodes(a.root)
    edges, missing = read_edges(a.root, build, nodes, by_header)
    if missing:
        print('  FAIL  circles: not built, so their calls cannot be read: ' + ' '.join(missing[:5]) +
              (' ...' if len(missing) > 5 else ''))
        return 1
    found = circles(edges)
    for comp in found:
        print('  FAIL  circle: ' + ' '.join('user/' + n for n in comp))
        path = way_round(edges, comp)
        for a_, b_ in zip(path, path[1:]):
            print('          user/%s -> user/%s: %s' % (a_, b_, edges[a_][b_]))
    n_edges = sum(len(e) for e in edges.values())
    if found:
        print('  FAIL  circles: %d among user/\'s %d files (a file leads back to itself; docs/HACKING.md)'
              % (len(found), len(nodes)))
        return 1
    print('  PASS  circles (%d files of user/, %d includes and calls, none leads back)' % (len(nodes), n_edges))
    return 0


if __name__ == '__main__':
    sys.exit(main())
