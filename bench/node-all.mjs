// The second yardstick of scripts/bench: what a user would write in Node 20
// to print every item of a paginated http source, one line of JSON each, as
// `nextpage all` does. Built-ins only: fetch, JSON.parse, JSON.stringify.
//
//   node bench/node-all.mjs URL [MAX_PAGES] > items.jsonl
//
// URL answers the first page, `{"items": [...], "next_cursor": "p2"}`; the
// next page is URL?cursor=p2, and so on until `next_cursor` is null (or
// MAX_PAGES pages). Each page's lines go out in one write.

const [url, maxPagesArgument] = process.argv.slice(2);
if (!url) {
  console.error("usage: node node-all.mjs URL [MAX_PAGES]");
  process.exit(64);
}
const maxPages = maxPagesArgument ? Number(maxPagesArgument) : Infinity;

function write(text) {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (error) => (error ? reject(error) : resolve()));
  });
}

let next = url;
let pages = 0;
while (next !== null && pages < maxPages) {
  const response = await fetch(next);
  if (!response.ok) {
    throw new Error(`${next}: ${response.status} ${response.statusText}`);
  }
  const page = JSON.parse(await response.text());
  pages += 1;
  let lines = "";
  for (const item of page.items) {
    lines += JSON.stringify(item) + "\n";
  }
  await write(lines);
  next = page.next_cursor ? `${url}?cursor=${encodeURIComponent(page.next_cursor)}` : null;
}
