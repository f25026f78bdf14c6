// Text search over the pairs on this page (keys, prompts, answers, signals): a pair that lacks
// a word typed is hidden; the filters above still apply. The one script report.html runs: its
// Content-Security-Policy allows this text by its hash and nothing else.
(() => {
  const box = document.getElementById("search");
  const said = document.getElementById("search-count");
  const identical = document.getElementById("identical");
  if (!box) return;
  const pairs = [...document.querySelectorAll("article.pair, article.same")];
  let texts = null;   // read once, on the first search: a page of 1,000 diffs is long to read
  const search = () => {
    texts ??= pairs.map((p) => p.textContent.toLowerCase());
    const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    let changed = 0, same = 0;
    pairs.forEach((p, i) => {
      const hit = words.every((w) => texts[i].includes(w));
      p.classList.toggle("search-miss", !hit);
      if (hit && p.classList.contains("same")) same++;
      else if (hit) changed++;
    });
    if (identical && same && words.length) identical.open = true;
    said.textContent = words.length
      ? `${changed} changed or failed and ${same} identical pairs on this page hold every word`
      : "";
  };
  box.addEventListener("input", search);
  if (box.value) search();   // (a browser that kept the box's text on reload)
})();
