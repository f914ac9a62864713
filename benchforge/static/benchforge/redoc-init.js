// ReDoc for /api/docs/redoc/: the schema URL comes from a data attribute (no inline script).
(function () {
  "use strict";
  const container = document.getElementById("redoc-container");
  Redoc.init(container.dataset.schemaUrl, { hideDownloadButton: false, disableSearch: false }, container);
})();
