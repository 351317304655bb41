#!/usr/bin/env python3
"""Build real graphs, as Matrix Market files, from data in Debian's package archive.

The benchmark graphs of docs/bench come from `sparsetune gen` or from ../shared/datasets, which
holds no graph of millions of edges. These two come from real artifacts instead, and nothing in
them was chosen for speed:

  identifiers SRC OUT   Undirected identifier-adjacency graph of a C source tree (for example
                        the kernel tree in Debian's linux-source-6.1): a vertex per distinct
                        identifier in the .c and .h files, numbered in order of first
                        appearance (files walked in sorted order), an edge between every two
                        identifiers that follow one another in a file. Like the
                        word-adjacency networks of text, its degrees are heavy-tailed.
  dictionary DIR OUT    Directed graph of a dictd dictionary (Debian's dict-gcide): a vertex per
                        headword, in the index's order, an edge from each headword to every
                        headword that its entry's text uses, as in the Pajek dictionary graphs
                        of SuiteSparse.

Get the sources with `apt-get download linux-source-6.1 dict-gcide` and `dpkg-deb -x`.
"""
import argparse
import gzip
import os
import re
import sys

IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")


def write_pattern(path, rows, cols, edges, symmetric, comment):
    """Writes edges (row, col), 0-based, as a coordinate pattern matrix; symmetric keeps row >= col."""
    kind = "symmetric" if symmetric else "general"
    with open(path, "w") as out:
        out.write(f"%%MatrixMarket matrix coordinate pattern {kind}\n")
        for line in comment.splitlines():
            out.write(f"% {line}\n")
        out.write(f"{rows} {cols} {len(edges)}\n")
        out.writelines(f"{r + 1} {c + 1}\n" for r, c in edges)


def identifier_graph(src, subdirs):
    ids = {}
    pairs = set()
    shift = 32
    roots = [os.path.join(src, d) for d in subdirs] if subdirs else [src]
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith((".c", ".h")):
                    continue
                with open(os.path.join(dirpath, name), "rb") as f:
                    text = f.read()
                previous = -1
                for match in IDENTIFIER.finditer(text):
                    vertex = ids.setdefault(match.group(), len(ids))
                    if previous >= 0 and previous != vertex:
                        low, high = min(previous, vertex), max(previous, vertex)
                        pairs.add(high << shift | low)
                    previous = vertex
    mask = (1 << shift) - 1
    edges = sorted((key >> shift, key & mask) for key in pairs)
    return len(ids), edges


def dictionary_graph(directory):
    index_path = os.path.join(directory, "gcide.index")
    data_path = os.path.join(directory, "gcide.dict.dz")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def base64_number(text):
        value = 0
        for ch in text:
            value = value * 64 + alphabet.index(ch)
        return value

    entries = []
    with open(index_path, encoding="utf-8", errors="replace") as index:
        for line in index:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3 or fields[0].startswith("00-database"):
                continue
            entries.append((fields[0].lower(), base64_number(fields[1]), base64_number(fields[2])))
    with gzip.open(data_path, "rb") as f:  # dictzip is gzip with a random-access header
        body = f.read()
    vertex = {}
    for word, _, _ in entries:
        vertex.setdefault(word, len(vertex))
    edges = set()
    for word, offset, length in entries:
        source = vertex[word]
        text = body[offset : offset + length].decode("utf-8", errors="replace").lower()
        for used in WORD.findall(text):
            target = vertex.get(used)
            if target is not None and target != source:
                edges.add((source, target))
    return len(vertex), sorted(edges)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    identifiers = commands.add_parser("identifiers", help="identifier-adjacency graph of a C tree")
    identifiers.add_argument("src")
    identifiers.add_argument("out")
    identifiers.add_argument("--subdirs", nargs="*", default=[], help="only these top-level folders")
    dictionary = commands.add_parser("dictionary", help="headword graph of a dictd dictionary")
    dictionary.add_argument("dir")
    dictionary.add_argument("out")
    args = parser.parse_args()

    if args.command == "identifiers":
        if not os.path.isdir(args.src):
            sys.exit(f"real_graphs: {args.src}: not a folder")
        n, edges = identifier_graph(args.src, args.subdirs)
        where = " ".join(args.subdirs) or "."
        comment = (f"identifier adjacency of {os.path.basename(os.path.abspath(args.src))} ({where}), "
                   "vertices in order of first appearance\nscripts/real_graphs.py identifiers")
        write_pattern(args.out, n, n, edges, True, comment)
    else:
        if not os.path.isfile(os.path.join(args.dir, "gcide.index")):
            sys.exit(f"real_graphs: {args.dir}: no gcide.index")
        n, edges = dictionary_graph(args.dir)
        write_pattern(args.out, n, n, edges, False,
                      "headword graph of GCIDE (Debian dict-gcide)\nscripts/real_graphs.py dictionary")
    print(f"{args.out}: {n} vertices, {len(edges)} edges", file=sys.stderr)


if __name__ == "__main__":
    main()
