import type { ReactNode } from "react";

/** One column: its header, how a row fills its cell, and whether it is numeric (right-aligned). */
export interface Column<T> {
  header: ReactNode;
  cell: (row: T) => ReactNode;
  /** "r": right-aligned header and cell (numbers, money). */
  align?: "r";
  /** Extra classes of the cell (`num`, `strong`, `actions`, …). */
  className?: string;
}

/**
 * The dashboard's one table: a header row of `scope="col"` cells and one row per item. Columns that
 * depend on what the key may do are left out by the caller (`canManage ? [...] : []`).
 */
export function Table<T>({
  testId,
  rows,
  rowKey,
  columns,
  rowTestId,
}: {
  testId: string;
  rows: readonly T[];
  rowKey: (row: T) => string | number;
  columns: readonly Column<T>[];
  rowTestId?: string;
}) {
  const cellClass = (c: Column<T>) => [c.align, c.className].filter(Boolean).join(" ") || undefined;
  return (
    <table data-testid={testId}>
      <thead>
        <tr>
          {columns.map((c, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: columns are fixed per render and never reorder
            <th key={i} scope="col" className={c.align}>
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)} data-testid={rowTestId}>
            {columns.map((c, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: as above
              <td key={i} className={cellClass(c)}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A dash for a missing value, muted. */
export const dash = <span className="muted">—</span>;
