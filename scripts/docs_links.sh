#!/usr/bin/env bash
# Fails (exit 1, one line per fault) when README.md or a docs/*.md names something of this
# repository that is not there:
#   - a relative markdown link [text](path) or [text](path#anchor) whose path does not exist
#     (from the linking file's folder), or whose #anchor is no heading of the target;
#   - a `path` in backquotes under one of the repository's top folders (src/, tests/, scripts/,
#     docs/, bench/, examples/) that does not exist, as a file, a folder, or a stem whose
#     .hpp/.cpp/.h/.c/.sh exists (`src/core/OutputFiles` names the pair);
#   - a section named as docs/NAME.md, "Title" or README, "Title" (in the docs or in the code's
#     comments) that is no heading there.
# Links to other sites (http:, https:, mailto:) are not followed.
#   scripts/docs_links.sh [ROOT]     (default: this repository; the unit suite runs it)
# shellcheck disable=SC2016  # the backquotes in patterns are markdown, not expansions
set -euo pipefail
ROOT="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)}"
cd "$ROOT"

faults=0
fault() {
    echo "docs_links: $1: $2" >&2
    faults=$((faults + 1))
}

# GitHub's anchor of a heading: lower case, spaces to '-', punctuation other than '-' and '_' gone.
anchors() { # FILE -> one anchor per line
    sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

# A path names something here: the file or folder, or a stem of a source pair.
exists() {
    local p="${1%/}" ext
    [[ -e "$p" ]] && return 0
    for ext in hpp cpp h c sh; do [[ -e "$p.$ext" ]] && return 0; done
    return 1
}

docs=(README.md docs/*.md)
for doc in "${docs[@]}"; do
    dir="$(dirname "$doc")"
    # Markdown links, outside code blocks and code spans.
    while IFS= read -r target; do
        [[ "$target" =~ ^[a-z]+: ]] && continue
        path="${target%%#*}"
        anchor=""
        [[ "$target" == *"#"* ]] && anchor="${target#*#}"
        file="$doc"
        if [[ -n "$path" ]]; then
            file="$dir/$path"
            [[ -e "$file" ]] || { fault "$doc" "dead link ($target): no $file"; continue; }
        fi
        if [[ -n "$anchor" && -f "$file" ]] && ! anchors "$file" | grep -qxF -- "$anchor"; then
            fault "$doc" "dead link ($target): no heading '#$anchor' in $file"
        fi
    done < <(awk '/^```/ { code = !code; next } !code' "$doc" | sed 's/`[^`]*`//g' |
        grep -oE '\]\([^) ]+\)' | sed -e 's/^](//' -e 's/)$//')
    # Backquoted paths under the repository's own folders.
    while IFS= read -r p; do
        exists "$p" || fault "$doc" "names \`$p\`, which is not in the repository"
    done < <(grep -oE '`(src|tests|scripts|docs|bench|examples)/[A-Za-z0-9_./-]+`' "$doc" | tr -d '`' | sort -u)
done
# A section named in words, (docs/)NAME.md, "Title", [NAME.md](...), "Title" or README, "Title",
# in the docs and the code's comments: NAME.md must have a heading that starts with Title (a
# quote that wraps a line is not seen).
while IFS=: read -r file ref; do
    name="${ref%%[.,)]*}"
    name="${name%.md}.md"
    title="${ref#*\"}"
    title="${title%\"}"
    target="docs/$name"
    [[ "$name" == README.md ]] && target=README.md
    [[ -f "$target" ]] || { fault "$file" "names $name, \"$title\": no $target"; continue; }
    sed -n 's/^#\{1,6\} \{1,\}//p' "$target" | awk -v t="$title" 'index($0, t) == 1 { found = 1 } END { exit !found }' ||
        fault "$file" "names $name, \"$title\": no such heading in $target"
done < <(git grep -oE '(README|[A-Z]+[.]md)[)]?, "[^"]+"' -- README.md docs src scripts bench tests ':!scripts/docs_links.sh' 2>/dev/null | sort -u)
((faults == 0)) || { echo "docs_links: $faults dead reference(s)" >&2; exit 1; }
