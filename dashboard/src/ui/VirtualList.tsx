import { type ReactNode, useState } from "react";

/**
 * A windowed list: only the rows in view (plus a few) are in the DOM, so 1,000 rows scroll as
 * smoothly as 20. Fixed row height; heights are set through the CSSOM (style props), which the CSP allows.
 */
export function VirtualList<T>({
  items,
  rowHeight,
  height,
  render,
  itemKey,
  label,
}: {
  items: T[];
  rowHeight: number;
  height: number;
  render: (item: T, index: number) => ReactNode;
  itemKey: (item: T) => string;
  label: string;
}) {
  const [top, setTop] = useState(0);
  const overscan = 8;
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + overscan);
  return (
    <div className="vlist" style={{ height }} onScroll={(e) => setTop(e.currentTarget.scrollTop)}>
      <div style={{ height: items.length * rowHeight, position: "relative" }}>
        <ul aria-label={label} style={{ transform: `translateY(${first * rowHeight}px)` }}>
          {items.slice(first, last).map((item, i) => (
            <li key={itemKey(item)} style={{ height: rowHeight }}>
              {render(item, first + i)}
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
