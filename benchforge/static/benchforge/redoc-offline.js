// Runs before ReDoc's bundle, so ReDoc works under the page's Content-Security-Policy and fetches
// nothing from outside the app:
// - ReDoc's bundle injects perfect-scrollbar's CSS as text inside a <style> element, which the CSP
//   refuses. The same CSS ships as static/benchforge/redoc-vendor.css (linked by the page), so that
//   text is dropped here. Empty <style> elements (styled-components fills them through the CSSOM)
//   still go in: the page's CSP allows exactly the hash of an empty style.
// - Its footer shows a vendor logo loaded from a CDN; the image points at a local file instead.
(function () {
  "use strict";
  const localLogo = document.currentScript.dataset.logo;
  const vendorCss = ".ps{";
  const appendChild = Node.prototype.appendChild;
  Node.prototype.appendChild = function (child) {
    if (this instanceof HTMLStyleElement && child.nodeType === Node.TEXT_NODE && child.data.startsWith(vendorCss)) {
      return child;
    }
    return appendChild.call(this, child);
  };
  const offsite = (value) => /^https?:\/\/cdn\.redoc\.ly\//.test(String(value));
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    return setAttribute.call(this, name, this instanceof HTMLImageElement && name === "src" && offsite(value) ? localLogo : value);
  };
  const src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    get: src.get,
    set: function (value) {
      src.set.call(this, offsite(value) ? localLogo : value);
    },
    configurable: true,
  });
})();
