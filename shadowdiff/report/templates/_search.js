// Text search over the pairs on this page (keys, prompts, answers, signals): a pair that lacks
// a word typed is hidden; the filters above still apply, and the count is of the pairs both
// leave. The one script report.html runs: its Content-Security-Policy allows this text by its
// hash and nothing else.
(() => {
  const box = document.getElementById("search");
  const said = document.getElementById("search-count");
  const identical = document.getElementById("identical");
  if (!box) return;
  const pairs = [...document.querySelectorAll("article.pair, article.same")];
  // one form of each letter: "é" typed matches "é" written as "e" and a combining accent
  const folded = (text) => text.normalize("NFC").toLowerCase();
  // what a pair says, not the page's words around it ("baseline", "priority", "line", "no answer"
  // where a side has none): its key, category, signals and their reasons, errors and finish
  // reasons (bdi), prompt, request and answers
  const said_in = "bdi, .prompt, .signals .tag, td:not(.note), pre";
  const text = (p) => [...p.querySelectorAll(said_in)].map((e) => e.textContent).join("\n");
  let texts = null;   // read once, on the first search: a page of 1,000 diffs is long to read
  const search = () => {
    texts ??= pairs.map((p) => folded(text(p)));
    const words = folded(box.value).split(/\s+/).filter(Boolean);
    let same = 0;
    pairs.forEach((p, i) => {
      const hit = words.every((w) => texts[i].includes(w));
      p.classList.toggle("search-miss", !hit);
      if (hit && p.classList.contains("same")) same++;
    });
    if (identical && same && words.length) identical.open = true;
    const changed = pairs.filter((p) => p.classList.contains("pair") && p.checkVisibility()).length;
    said.textContent = words.length
      ? `${changed} changed or failed and ${same} identical pairs on this page hold every word`
      : "";
  };
  box.addEventListener("input", search);
  for (const radio of document.querySelectorAll(".filters input[type=radio]")) {
    radio.addEventListener("change", () => { if (box.value) search(); });
  }
  if (box.value) search();   // (a browser that kept the box's text on reload)
})();
